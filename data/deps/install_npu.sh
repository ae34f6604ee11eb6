#!/usr/bin/env bash
# Bare-metal install of the same Ascend stack, modelled on verl's NPU install script
# (written for verlstudy lesson 06; not a copy). Its refs were edited by hand, separately.
set -euo pipefail

git clone --depth 1 --branch core_r0.18.0 \
    https://github.com/NVIDIA/Megatron-LM.git   # still the pre-#7827 ref
pip install --no-deps -e Megatron-LM

git clone https://gitcode.com/Ascend/MindSpeed.git
cd MindSpeed
git checkout core_r0.18.0
pip install -e .
cd ..

ADAPTOR_REF=core_r0.18.0
git clone --branch "$ADAPTOR_REF" https://gitcode.com/Ascend/MegatronAdaptor.git; pip install -e MegatronAdaptor

#!/usr/bin/env bash
# Bare-metal install before the upgrade to Megatron 0.18 (verlstudy lesson 08 fixture, modelled on the state before #7604).
set -euo pipefail
git clone --depth 1 --branch core_r0.16.0 https://github.com/NVIDIA/Megatron-LM.git
git clone https://gitcode.com/Ascend/MindSpeed.git && git -C MindSpeed checkout core_r0.16.0
pip install --no-deps mbridge==0.15.1 transformers==4.57.1 \
    torch==2.7.1 torch_npu==2.7.1

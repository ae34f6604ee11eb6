#!/usr/bin/env bash
# Bare-metal install after a hand-edited upgrade (verlstudy lesson 08 fixture, modelled on #7604).
set -euo pipefail
git clone --depth 1 --branch core_r0.18.0 https://github.com/NVIDIA/Megatron-LM.git
# the r/v swap in the other direction: MindSpeed follows Megatron on core_r branches; core_v is NVIDIA's tag scheme
git clone https://gitcode.com/Ascend/MindSpeed.git && git -C MindSpeed checkout core_v0.18.0
git clone -b core_r0.18.0 https://gitcode.com/Ascend/MegatronAdaptor.git
pip install --no-deps git+https://github.com/NVIDIA-NeMo/Megatron-Bridge.git@v0.5.0 \
    torch==2.10.0+cpu torchvision==0.25.0+cpu

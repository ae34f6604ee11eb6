#!/usr/bin/env bash
# verlstudy lesson 08: the bare-metal install after verl #7604, rewritten by the course with the real script's pins
# and shell shapes. Source: scripts/install_vllm_mcore_npu.sh at wwj-git-rgb/verl@3d36367e83 (post-#7604,
# pre-#7827). Left out: the vllm-ascend build flags and the verl install (no pins there).
set -ex
USE_MEGATRON=${USE_MEGATRON:-1}

pip install torchvision==0.25.0
pip install torchaudio==2.10.0
pip install triton-ascend==3.2.2 --extra-index-url https://triton-ascend.osinfra.cn/pypi/simple/
pip install "transformers==5.10.4"

git clone --depth 1 --branch v0.23.0 https://github.com/vllm-project/vllm.git
git clone -b releases/v0.23.0 https://github.com/vllm-project/vllm-ascend.git

if [ $USE_MEGATRON -eq 1 ]; then
    git clone https://gitcode.com/Ascend/MindSpeed.git
    cd MindSpeed && git checkout core_r0.18.0 && cd ..
    git clone --depth 1 --branch core_r0.18.0 https://github.com/NVIDIA/Megatron-LM.git
    git clone --depth 1 --branch core_r0.18.0 https://gitcode.com/ascend/MegatronAdaptor.git
    git clone --depth 1 https://gitcode.com/ascend/TransformerEngineNPU.git
    git clone --depth 1 https://gitcode.com/ascend/MindSpeed-Ops.git
    git clone --depth 1 https://gitcode.com/ascend/MindSpeed-Bridge.git
    git clone --depth 1 --branch v0.5.0 https://github.com/NVIDIA-NeMo/Megatron-Bridge.git
    pip install -e Megatron-LM
    pip install -e MindSpeed
fi

pip install transformers==5.10.4 xgrammar==0.1.33

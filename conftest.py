# Kernels started by nbval and papermill inherit this process's environment: make it quiet and deterministic.
from verlstudy.runner import quiet_kernel_env

quiet_kernel_env()

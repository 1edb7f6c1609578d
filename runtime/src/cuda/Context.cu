//===- Context.cu - what the CUDA launchers share -------------------------===//

#include "Common.cuh"

namespace tgc::rt::cuda {

Status check(int error, const char *what) {
  if (error == cudaSuccess)
    return Status::success();
  return Status::failure(std::string(what) + ": " +
                         cudaGetErrorString(cudaError_t(error)));
}

Status Context::reserveWorkspace(size_t bytes) {
  if (bytes <= workspaceBytes)
    return Status::success();
  if (capturing)
    return Status::failure("the workspace cannot grow in a captured step");
  ++moves;
  // The stream may still use the old workspace.
  TGC_CUDA_CALL(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  TGC_CUDA_CALL(cudaFree(workspace));
  workspace = nullptr;
  workspaceBytes = 0;
  cudaError_t error = cudaMalloc(&workspace, bytes);
  if (error == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t freeBytes = 0, totalBytes = 0;
    cudaMemGetInfo(&freeBytes, &totalBytes);
    return Status::failure(
        "out of GPU memory: the kernels' workspace (cuBLASLt and scratch, "
        "beyond the planned regions) needs " +
        std::to_string(bytes) + " bytes, " + std::to_string(freeBytes) +
        " of " + std::to_string(totalBytes) + " are free");
  }
  TGC_CUDA_CALL(error);
  workspaceBytes = bytes;
  return Status::success();
}

Status Context::uploadConstants(const void *bytes, size_t size) {
  if (bytes == constantsSource && size == constantsBytes)
    return Status::success();
  if (capturing)
    return Status::failure("constants cannot be uploaded in a captured step");
  ++moves;
  TGC_CUDA_CALL(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  TGC_CUDA_CALL(cudaFree(constants));
  constants = nullptr;
  constantsSource = nullptr;
  constantsBytes = 0;
  if (size == 0)
    return Status::success();
  TGC_CUDA_CALL(cudaMalloc(&constants, size));
  TGC_CUDA_CALL(cudaMemcpy(constants, bytes, size, cudaMemcpyHostToDevice));
  constantsSource = bytes;
  constantsBytes = size;
  return Status::success();
}

bool broadcastDims(const std::vector<int64_t> &operandShape,
                   const std::vector<int64_t> &resultShape, Dims &dims) {
  if (resultShape.size() > size_t(kMaxRank) ||
      operandShape.size() > resultShape.size())
    return false;
  dims = Dims();
  dims.rank = int(resultShape.size());
  int64_t stride = 1;
  size_t lead = resultShape.size() - operandShape.size();
  for (int d = dims.rank - 1; d >= 0; --d) {
    dims.size[d] = resultShape[d];
    if (size_t(d) < lead)
      continue;
    int64_t size = operandShape[d - lead];
    dims.stride[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
  return true;
}

} // namespace tgc::rt::cuda

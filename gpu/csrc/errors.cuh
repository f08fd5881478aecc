// errors.cuh — how the library's host code fails: CUDA errors (CK) and
// the library's own (Error) are exceptions inside, caught at the C ABI
// (guard in streamsampler_gpu.cu) and turned into an SSG_* status and a
// message; sticky CUDA errors mark the context unusable.
#pragma once

#include "streamsampler_gpu.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

struct Error {
    int code;
    std::string msg;
};

int code_of(cudaError_t e) {
    switch (e) {
    case cudaErrorMemoryAllocation:
        return SSG_ERR_OUT_OF_MEMORY;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
        return SSG_ERR_NO_DEVICE;
    default:
        return SSG_ERR_CUDA;
    }
}

// Sticky errors leave the CUDA context unusable: every later call fails.
bool sticky(cudaError_t e) {
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorInvalidPc:
        return true;
    default:
        return false;
    }
}

void set_err(char *err, size_t len, const std::string &m) {
    if (!err || len == 0) return;
    const size_t n = std::min(len - 1, m.size());
    std::memcpy(err, m.data(), n);
    err[n] = 0;
}

std::string fmt(const char *f, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

struct CudaFail {
    cudaError_t e;
    std::string what;
};

#define CK(call)                                                                     \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) throw CudaFail{e_, #call};                            \
    } while (0)

void check_launch(const char *what) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) throw CudaFail{e, what};
}

} // namespace

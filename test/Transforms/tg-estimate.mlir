// RUN: tgc-opt %s --tg-estimate="device=%S/Inputs/estimate-device.json per-op=true" -o /dev/null 2>&1 | FileCheck %s
// RUN: tgc-opt %s --tg-estimate="device=%S/Inputs/estimate-device.json allow-tf32=true per-op=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TF32
// RUN: tgc-opt %s --tg-estimate=device=h100 -o /dev/null 2>&1 | FileCheck %s --check-prefix=H100
// RUN: tgc-opt %s --tg-estimate | FileCheck %s --check-prefix=IR
// RUN: not tgc-opt %s --tg-estimate=device=v100 -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: echo '{"memory_bandwidth": 1e9, "vector_flops": -1, "matmul_flops": {"f32": 1e9}}' > %t.json
// RUN: not tgc-opt %s --tg-estimate=device=%t.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: echo '{"memory_bandwidth": 1e9, "vector_flops": 1e9, "matmul_flops": {"fp8": 1e9}}' > %t2.json
// RUN: not tgc-opt %s --tg-estimate=device=%t2.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=FIELD

// Every figure below is worked out by hand on a device of round rates
// (1 GB/s; 1 GFLOP/s on the vector units and for f32 matrices, 2 for tf32,
// 4 for bf16): each op takes max(compute, memory).

// CHECK: roofline estimate on toy (round rates for hand-checked tests): 1 GB/s; matrix TFLOP/s f32 0.001, tf32 0.002, bf16 0.004, f16 0.001; vector 0.001
// Kernels on the stream: the matmul's one GEMM (its batch folds into the
// rows), the GELU, no kernel for the reshape (a view), and the unfused
// attention's 7: f32 copies of Q, K and V, then for its one chunk of heads
// the scores' GEMM, the softmax, P V's GEMM and the bf16 rounding.
// CHECK: step @step: 6.27 us, 0.000 GFLOP, 0.000 GB moved, 9 kernels
// The kinds, most time first: attention 3.072 us, matmul 2.048, gelu 1.152.
// CHECK: tg.attention 1
// CHECK-SAME: 3.07 us  49.0%  memory
// CHECK-NEXT: tg.matmul 1
// CHECK-SAME: 2.05 us  32.7%  compute
// CHECK-NEXT: tg.gelu 1
// CHECK-SAME: 1.15 us  18.4%  compute
// Model FLOPs 2048 + 1152 + 760 = 3960 in 6.272 us against the f32 peak.
// CHECK: step: 6.27 us; model FLOPs 0.000 GFLOP, MFU 63.1% of the f32 matrix peak
// CHECK-NEXT: launches: 9 kernels, products and copies a step, in 1 CUDA graph launch
// CHECK-LABEL: ops of @step
// 2 x 4 x 16 outputs, K = 8: 2048 FLOPs, all matrix; reads 64 + 128 f32,
// writes 128: 2.048 us of compute against 1.28 us of memory.
// CHECK-NEXT: #0 tg.matmul flops=2048 matmul=2048(f32) read=768 written=512 scratch=0 time=2.048us compute
// 9 FLOPs per element on the vector units; 512 + 512 bytes.
// CHECK-NEXT: #1 tg.gelu flops=1152 matmul=0 read=512 written=512 scratch=0 time=1.152us compute
// The CUDA kernel computes all 2 x 4 x 4 scores in f32 GEMMs (QK^T and PV,
// 2 x 16 x 32 = 1024 FLOPs) on f32 copies of the bf16 operands: 16 bytes
// per score (512) plus 8 per copied element (4 x 64 elements: 2048).
// The reshape (#2) is a view: no kernel, no cost.
// CHECK-NEXT: #3 tg.attention flops=760 matmul=1024(f32) read=384 written=128 scratch=2560 time=3.072us memory
// CHECK-NOT: #4

// With TF32 the matmul runs at 2 GFLOP/s: 1.024 us, now memory-bound (1.28).
// TF32: #0 tg.matmul flops=2048 matmul=2048(tf32) read=768 written=512 scratch=0 time=1.28us memory

// H100: roofline estimate on h100 (NVIDIA H100 SXM5 80GB): 3350 GB/s; matrix TFLOP/s f32 67, tf32 494.7, bf16 989.4, f16 989.4; vector 67

// IR: func.func @step

// UNKNOWN: error: tg-estimate: unknown device 'v100' (built in: h100, a100; or a JSON device file)
// NEGATIVE: error: tg-estimate: device file '{{.*}}.json': 'vector_flops' must be a positive number (per second)
// FIELD: error: tg-estimate: device file '{{.*}}.json': unknown type 'matmul_flops.fp8' (expected f32, tf32, bf16, f16)

func.func @step(%x: tensor<2x4x8xf32>, %w: tensor<8x16xf32>,
                %q: tensor<2x4x8xbf16>, %k: tensor<2x4x8xbf16>,
                %v: tensor<2x4x8xbf16>) -> (tensor<2x4x16xf32>, tensor<2x4x8xbf16>) {
  %y = tg.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %g = tg.gelu %y : tensor<2x4x16xf32>
  %r = tg.reshape %g : tensor<2x4x16xf32> -> tensor<8x16xf32>
  %a = tg.attention %q, %k, %v {causal = true} : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16>
  return %g, %a : tensor<2x4x16xf32>, tensor<2x4x8xbf16>
}

// 16-bit heads of a multiple of 16 run the fused kernels: only the causal
// triangle's 2 x 528 scores, both products (2 x 16 + 2 x 16 FLOPs a score)
// on bf16 tensor cores (67584 / 4e9 s) plus the softmax's 6 a score on the
// vector units (6336 / 1e9 s): 23.232 us; no scratch traffic.
// CHECK-LABEL: ops of @fused
// CHECK-NEXT: #0 tg.attention flops=73920 matmul=67584(bf16) read=6144 written=2048 scratch=0 time=23.23us compute
func.func @fused(%q: tensor<2x32x16xbf16>) -> tensor<2x32x16xbf16> {
  %a = tg.attention %q, %q, %q {causal = true} : (tensor<2x32x16xbf16>, tensor<2x32x16xbf16>, tensor<2x32x16xbf16>) -> tensor<2x32x16xbf16>
  return %a : tensor<2x32x16xbf16>
}

// A sliding window of 8 (Mistral's, at toy size): the fused kernels visit
// only the keys each query sees, i - 8 < j <= i, 8 x 9 / 2 + 24 x 8 = 228
// scores a batch where full causal attention has 528: 2 x 228 x 64 =
// 29184 matrix FLOPs (7.296 us on bf16 tensor cores) and 6 a score on the
// vector units (2.736 us): 10.032 us.
// CHECK-LABEL: ops of @window
// CHECK-NEXT: #0 tg.attention flops=31920 matmul=29184(bf16) read=6144 written=2048 scratch=0 time=10.03us compute
func.func @window(%q: tensor<2x32x16xbf16>) -> tensor<2x32x16xbf16> {
  %a = tg.attention %q, %q, %q {causal = true, window = 8} : (tensor<2x32x16xbf16>, tensor<2x32x16xbf16>, tensor<2x32x16xbf16>) -> tensor<2x32x16xbf16>
  return %a : tensor<2x32x16xbf16>
}

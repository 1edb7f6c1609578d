// RUN: tgc-opt %s --tg-model-stats=per-op=true -o /dev/null 2>&1 | FileCheck %s

// The cost (FLOPs, bytes read, bytes written) of every tg op, through the
// per-op report of tg-model-stats. Every expected value is worked out by hand
// from the convention of CostOpInterface (TGInterfaces.td) and the per-op
// formulas stated in the comments of TGCost.cpp, never copied from the tool:
// - bytes read = sum of the operand tensor sizes, bytes written = sum of the
//   result tensor sizes, unless the op overrides it (embedding, slice);
// - element sizes: f32 4, f16 2, bf16 2, i64 8, i32 4, i8 1, i1 1 byte.
// Each check is preceded by its arithmetic as `flops; read; written`.

//===----------------------------------------------------------------------===//
// Forward ops: linear algebra, elementwise, normalization, softmax,
// embedding, attention, loss.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: op costs of @forward_ops

// [2,3,4] x [4,5] -> [2,3,5]: 2 * 30 outputs * K=4 = 240;
// 24*4 + 20*4 = 96 + 80 = 176; 30*4 = 120.
// CHECK-NEXT: #0 tg.matmul flops=240 read=176 written=120{{$}}
// transpose_lhs: lhs [2,4,3] is [B,K,M], K=4 (not the last dim 3):
// 2 * 30 * 4 = 240; 96 + 80 = 176; 120.
// CHECK-NEXT: #1 tg.matmul flops=240 read=176 written=120{{$}}
// f16, both transposed: lhs [6,2] = [K=6,M=2], rhs [3,6] = [N=3,K=6] -> [2,3]:
// 2 * 6 outputs * 6 = 72; 12*2 + 18*2 = 60; 6*2 = 12.
// CHECK-NEXT: #2 tg.matmul flops=72 read=60 written=12{{$}}
// [2,3,5] + [5]: 30; 120 + 20 = 140; 120.
// CHECK-NEXT: #3 tg.add flops=30 read=140 written=120{{$}}
// [2,3,5] - f32 scalar: 30; 120 + 4 = 124; 120.
// CHECK-NEXT: #4 tg.sub flops=30 read=124 written=120{{$}}
// f16 [2,4] * [1,4]: 8; 8*2 + 4*2 = 24; 8*2 = 16.
// CHECK-NEXT: #5 tg.mul flops=8 read=24 written=16{{$}}
// bf16 [2,4] / bf16 scalar: 8; 16 + 2 = 18; 16.
// CHECK-NEXT: #6 tg.div flops=8 read=18 written=16{{$}}
// [3,1] max [5] -> [3,5] (outer broadcast): 15; 12 + 20 = 32; 15*4 = 60.
// CHECK-NEXT: #7 tg.maximum flops=15 read=32 written=60{{$}}
// [2,3,5] min [2,3,5]: 30; 120 + 120 = 240; 120.
// CHECK-NEXT: #8 tg.minimum flops=30 read=240 written=120{{$}}
// Unary ops: one FLOP per element, read = written = the tensor size.
// neg f32 [2,3,5]: 30; 120; 120.
// CHECK-NEXT: #9 tg.neg flops=30 read=120 written=120{{$}}
// exp f16 [2,4]: 8; 16; 16.
// CHECK-NEXT: #10 tg.exp flops=8 read=16 written=16{{$}}
// log bf16 [2,4]: 8; 16; 16.
// CHECK-NEXT: #11 tg.log flops=8 read=16 written=16{{$}}
// sqrt f32 [5]: 5; 20; 20.
// CHECK-NEXT: #12 tg.sqrt flops=5 read=20 written=20{{$}}
// rsqrt f32 [3,1]: 3; 12; 12.
// CHECK-NEXT: #13 tg.rsqrt flops=3 read=12 written=12{{$}}
// tanh f32 [2,3,5]: 30; 120; 120.
// CHECK-NEXT: #14 tg.tanh flops=30 read=120 written=120{{$}}
// relu f32 [2,3,5]: 30; 120; 120.
// CHECK-NEXT: #15 tg.relu flops=30 read=120 written=120{{$}}
// gelu: 9 per element (x^3 2, *c 1, +x 1, *sqrt(2/pi) 1, tanh 1, +1 1, *x 1,
// *0.5 1): 9 * 30 = 270; 120; 120.
// CHECK-NEXT: #16 tg.gelu flops=270 read=120 written=120{{$}}
// where i1 [3,1], f32 [5], f32 scalar -> f32 [3,5]: 15; 3*1 + 20 + 4 = 27;
// 60.
// CHECK-NEXT: #17 tg.where flops=15 read=27 written=60{{$}}
// softmax: 5 per element: 5 * 30 = 150; 120; 120.
// CHECK-NEXT: #18 tg.softmax flops=150 read=120 written=120{{$}}
// softmax f16 [2,4] along axis 0: 5 * 8 = 40; 16; 16.
// CHECK-NEXT: #19 tg.softmax flops=40 read=16 written=16{{$}}
// layer_norm: 7 per element: 7 * 30 = 210; 120 + 20 + 20 = 160; 120.
// CHECK-NEXT: #20 tg.layer_norm flops=210 read=160 written=120{{$}}
// embedding f32 [10,5] by i64 [2,3]: 0 FLOPs; reads the indices and the
// selected rows only: 6*8 + 6*5*4 = 48 + 120 = 168 (not the 200-byte table);
// 120.
// CHECK-NEXT: #21 tg.embedding flops=0 read=168 written=120{{$}}
// embedding f16 [7,4] by i32 [3]: 0; 3*4 + 3*4*2 = 12 + 24 = 36; 24.
// CHECK-NEXT: #22 tg.embedding flops=0 read=36 written=24{{$}}
// attention, non-causal: B=2, Tq=3, Tk=5, D=4, Dv=6: scores 3*5 = 15 per
// batch, (2*4 + 2*6 + 6) = 26 per score: 2 * 15 * 26 = 780;
// 96 + 160 + 240 = 496; [2,3,6] 36*4 = 144.
// CHECK-NEXT: #23 tg.attention flops=780 read=496 written=144{{$}}
// attention, causal: B=2*2=4, T=3, D=4, Dv=2: scores 3*4/2 = 6 per batch,
// (2*4 + 2*2 + 6) = 18 per score: 4 * 6 * 18 = 432;
// 48*4 + 48*4 + 24*4 = 192 + 192 + 96 = 480; [2,2,3,2] 24*4 = 96.
// CHECK-NEXT: #24 tg.attention flops=432 read=480 written=96{{$}}
// cross_entropy f32 [2,3,5], i64 [2,3]: 4 * 30 logits + 2 * 6 rows = 132;
// 120 + 48 = 168; scalar f32 4.
// CHECK-NEXT: #25 tg.cross_entropy flops=132 read=168 written=4{{$}}

func.func @forward_ops(
    %a: tensor<2x3x4xf32> {tg.input = "a"},
    %w: tensor<4x5xf32> {tg.param = "w"},
    %lt: tensor<2x4x3xf32> {tg.input = "lt"},
    %hl: tensor<6x2xf16> {tg.input = "hl"},
    %hr: tensor<3x6xf16> {tg.param = "hr"},
    %x: tensor<2x3x5xf32> {tg.input = "x"},
    %b: tensor<5xf32> {tg.param = "b"},
    %s: tensor<f32> {tg.input = "s"},
    %h: tensor<2x4xf16> {tg.input = "h"},
    %hrow: tensor<1x4xf16> {tg.param = "hrow"},
    %bb: tensor<2x4xbf16> {tg.input = "bb"},
    %bs: tensor<bf16> {tg.input = "bs"},
    %col: tensor<3x1xf32> {tg.input = "col"},
    %c: tensor<3x1xi1> {tg.input = "c"},
    %ln_b: tensor<5xf32> {tg.param = "ln_b"},
    %table: tensor<10x5xf32> {tg.param = "table"},
    %idx: tensor<2x3xi64> {tg.input = "idx"},
    %tabh: tensor<7x4xf16> {tg.param = "tabh"},
    %idx32: tensor<3xi32> {tg.input = "idx32"},
    %k: tensor<2x5x4xf32> {tg.input = "k"},
    %v: tensor<2x5x6xf32> {tg.input = "v"},
    %q4: tensor<2x2x3x4xf32> {tg.input = "q4"},
    %k4: tensor<2x2x3x4xf32> {tg.input = "k4"},
    %v4: tensor<2x2x3x2xf32> {tg.input = "v4"},
    %targets: tensor<2x3xi64> {tg.input = "targets"}) -> tensor<f32>
    attributes {tg.model} {
  %0 = tg.matmul %a, %w
      : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %1 = tg.matmul %lt, %w {transpose_lhs = true}
      : (tensor<2x4x3xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %2 = tg.matmul %hl, %hr {transpose_lhs = true, transpose_rhs = true}
      : (tensor<6x2xf16>, tensor<3x6xf16>) -> tensor<2x3xf16>
  %3 = tg.add %x, %b : (tensor<2x3x5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  %4 = tg.sub %x, %s : (tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  %5 = tg.mul %h, %hrow : (tensor<2x4xf16>, tensor<1x4xf16>) -> tensor<2x4xf16>
  %6 = tg.div %bb, %bs : (tensor<2x4xbf16>, tensor<bf16>) -> tensor<2x4xbf16>
  %7 = tg.maximum %col, %b : (tensor<3x1xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %8 = tg.minimum %x, %x
      : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %9 = tg.neg %x : tensor<2x3x5xf32>
  %10 = tg.exp %h : tensor<2x4xf16>
  %11 = tg.log %bb : tensor<2x4xbf16>
  %12 = tg.sqrt %b : tensor<5xf32>
  %13 = tg.rsqrt %col : tensor<3x1xf32>
  %14 = tg.tanh %x : tensor<2x3x5xf32>
  %15 = tg.relu %x : tensor<2x3x5xf32>
  %16 = tg.gelu %x : tensor<2x3x5xf32>
  %17 = tg.where %c, %b, %s
      : (tensor<3x1xi1>, tensor<5xf32>, tensor<f32>) -> tensor<3x5xf32>
  %18 = tg.softmax %x {axis = -1 : i64} : tensor<2x3x5xf32>
  %19 = tg.softmax %h {axis = 0 : i64} : tensor<2x4xf16>
  %20 = tg.layer_norm %x, %b, %ln_b
      : (tensor<2x3x5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  %21 = tg.embedding %table, %idx
      : (tensor<10x5xf32>, tensor<2x3xi64>) -> tensor<2x3x5xf32>
  %22 = tg.embedding %tabh, %idx32
      : (tensor<7x4xf16>, tensor<3xi32>) -> tensor<3x4xf16>
  %23 = tg.attention %a, %k, %v
      : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x6xf32>)
      -> tensor<2x3x6xf32>
  %24 = tg.attention %q4, %k4, %v4 {causal = true}
      : (tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>, tensor<2x2x3x2xf32>)
      -> tensor<2x2x3x2xf32>
  %25 = tg.cross_entropy %x, %targets
      : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %25 : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Shape ops, casts, constants (all 0 FLOPs) and reductions.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: op costs of @shape_ops

// reshape f32 [2,3,4] -> [6,4]: 0; 24*4 = 96; 96.
// CHECK-NEXT: #0 tg.reshape flops=0 read=96 written=96{{$}}
// transpose [2,3,4] -> [4,2,3]: 0; 96; 96.
// CHECK-NEXT: #1 tg.transpose flops=0 read=96 written=96{{$}}
// slice f32 [8,6] -> box [3,4]: 0; reads only the box 12*4 = 48 (not the
// 192-byte operand); 48.
// CHECK-NEXT: #2 tg.slice flops=0 read=48 written=48{{$}}
// slice i32 [10] -> [5]: 0; 5*4 = 20; 20.
// CHECK-NEXT: #3 tg.slice flops=0 read=20 written=20{{$}}
// split f32 [8,6] -> [3,6], [5,6]: 0; 48*4 = 192; 18*4 + 30*4 = 72 + 120 = 192.
// CHECK-NEXT: #4 tg.split flops=0 read=192 written=192{{$}}
// concat [5,6], [3,6] -> [8,6]: 0; 120 + 72 = 192; 192.
// CHECK-NEXT: #5 tg.concat flops=0 read=192 written=192{{$}}
// reduce_sum [2,3,4] over axis 1 -> [2,4]: one per input element 24; 96;
// 8*4 = 32.
// CHECK-NEXT: #6 tg.reduce_sum flops=24 read=96 written=32{{$}}
// reduce_max bf16 [4,8] over axis 1 -> [4]: 32; 32*2 = 64; 4*2 = 8.
// CHECK-NEXT: #7 tg.reduce_max flops=32 read=64 written=8{{$}}
// reduce_mean [2,3,4] over axes 0,1 keep_dims -> [1,1,4]: 24 accumulations
// + 4 divides = 28; 96; 4*4 = 16.
// CHECK-NEXT: #8 tg.reduce_mean flops=28 read=96 written=16{{$}}
// broadcast_to f32 [4] -> [2,3,4]: 0; 16; 96.
// CHECK-NEXT: #9 tg.broadcast_to flops=0 read=16 written=96{{$}}
// broadcast_to i1 [4,1] -> [3,4,5]: 0; 4*1 = 4; 60*1 = 60.
// CHECK-NEXT: #10 tg.broadcast_to flops=0 read=4 written=60{{$}}
// cast f32 [2,3,4] -> bf16: 0; 96; 24*2 = 48.
// CHECK-NEXT: #11 tg.cast flops=0 read=96 written=48{{$}}
// cast i64 [4] -> i32: 0; 4*8 = 32; 4*4 = 16.
// CHECK-NEXT: #12 tg.cast flops=0 read=32 written=16{{$}}
// cast f32 [2,3,4] -> i8: 0; 96; 24*1 = 24.
// CHECK-NEXT: #13 tg.cast flops=0 read=96 written=24{{$}}
// cast f32 [2,3,4] -> i1: 0; 96; 24*1 = 24.
// CHECK-NEXT: #14 tg.cast flops=0 read=96 written=24{{$}}
// constant f32 [2,2]: 0; no operands 0; 4*4 = 16.
// CHECK-NEXT: #15 tg.constant flops=0 read=0 written=16{{$}}
// constant i64 [3]: 0; 0; 3*8 = 24.
// CHECK-NEXT: #16 tg.constant flops=0 read=0 written=24{{$}}
// fill f16 [4,8]: 0; 0; 32*2 = 64.
// CHECK-NEXT: #17 tg.fill flops=0 read=0 written=64{{$}}
// fill i1 scalar: 0; 0; 1.
// CHECK-NEXT: #18 tg.fill flops=0 read=0 written=1{{$}}
// reduce_mean [2,3,4] over all axes -> f32 scalar: 24 + 1 = 25; 96; 4.
// CHECK-NEXT: #19 tg.reduce_mean flops=25 read=96 written=4{{$}}
// cumsum bf16 [4,8] along axis 1: one add per element 32; 32*2 = 64; 64.
// CHECK-NEXT: #20 tg.cumsum flops=32 read=64 written=64{{$}}
// constant i64 [3,2]: 0; 0; 6*8 = 48.
// CHECK-NEXT: #21 tg.constant flops=0 read=0 written=48{{$}}
// gather f32 [2,3,4] by an i64 [3,2] index along axis 2 -> [2,3,2]: 0;
// 96 + 6*8 = 144; 12*4 = 48.
// CHECK-NEXT: #22 tg.gather flops=0 read=144 written=48{{$}}
// gather_grad of that back into [2,3,4]: one add per gradient element 12;
// 48 + 48 = 96; 96.
// CHECK-NEXT: #23 tg.gather_grad flops=12 read=96 written=96{{$}}

func.func @shape_ops(
    %x: tensor<2x3x4xf32> {tg.input = "x"},
    %m: tensor<8x6xf32> {tg.param = "m"},
    %i: tensor<10xi32> {tg.input = "i"},
    %hb: tensor<4x8xbf16> {tg.input = "hb"},
    %row: tensor<4xf32> {tg.param = "row"},
    %c: tensor<4x1xi1> {tg.input = "c"},
    %idx: tensor<4xi64> {tg.input = "idx"}) -> tensor<f32>
    attributes {tg.model} {
  %0 = tg.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = tg.transpose %x {permutation = array<i64: 2, 0, 1>}
      : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %2 = tg.slice %m {offsets = array<i64: 2, 1>} : tensor<8x6xf32> -> tensor<3x4xf32>
  %3 = tg.slice %i {offsets = array<i64: 5>} : tensor<10xi32> -> tensor<5xi32>
  %p:2 = tg.split %m {axis = 0 : i64}
      : tensor<8x6xf32> -> tensor<3x6xf32>, tensor<5x6xf32>
  %5 = tg.concat %p#1, %p#0 {axis = 0 : i64}
      : (tensor<5x6xf32>, tensor<3x6xf32>) -> tensor<8x6xf32>
  %6 = tg.reduce_sum %x {axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x4xf32>
  %7 = tg.reduce_max %hb {axes = array<i64: 1>} : tensor<4x8xbf16> -> tensor<4xbf16>
  %8 = tg.reduce_mean %x {axes = array<i64: 0, 1>, keep_dims = true}
      : tensor<2x3x4xf32> -> tensor<1x1x4xf32>
  %9 = tg.broadcast_to %row : tensor<4xf32> -> tensor<2x3x4xf32>
  %10 = tg.broadcast_to %c : tensor<4x1xi1> -> tensor<3x4x5xi1>
  %11 = tg.cast %x : tensor<2x3x4xf32> -> tensor<2x3x4xbf16>
  %12 = tg.cast %idx : tensor<4xi64> -> tensor<4xi32>
  %13 = tg.cast %x : tensor<2x3x4xf32> -> tensor<2x3x4xi8>
  %14 = tg.cast %x : tensor<2x3x4xf32> -> tensor<2x3x4xi1>
  %15 = tg.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %16 = tg.constant dense<[0, 1, 2]> : tensor<3xi64>
  %17 = tg.fill 1.0 : tensor<4x8xf16>
  %18 = tg.fill 1.0 : tensor<i1>
  %19 = tg.reduce_mean %x {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<f32>
  %20 = tg.cumsum %hb {axis = 1 : i64} : tensor<4x8xbf16>
  %pos = tg.constant dense<[[0, 3], [1, 2], [3, 3]]> : tensor<3x2xi64>
  %21 = tg.gather %x, %pos {axis = 2 : i64}
      : (tensor<2x3x4xf32>, tensor<3x2xi64>) -> tensor<2x3x2xf32>
  %22 = tg.gather_grad %21, %pos {axis = 2 : i64}
      : (tensor<2x3x2xf32>, tensor<3x2xi64>) -> tensor<2x3x4xf32>
  return %19 : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Mixture-of-experts ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: op costs of @moe_ops

// top_k f32 [6,4], k = 2 -> i64 [6,2]: a selection pass over each row per
// kept index 24*2 = 48; 24*4 = 96; 12*8 = 96.
// CHECK-NEXT: #0 tg.top_k flops=48 read=96 written=96{{$}}
// moe_route i64 [6,2] -> rows [12,1], positions [6,2], offsets [5], all
// i64: 0; 96; 96 + 96 + 40 = 232.
// CHECK-NEXT: #1 tg.moe_route flops=0 read=96 written=232{{$}}
// gather f32 [6,8] by the rows [12,1] along 0 -> [12,8]: 0; 192 + 96 = 288;
// 96*4 = 384.
// CHECK-NEXT: #2 tg.gather flops=0 read=288 written=384{{$}}
// expert_linear of [12,8] by 4 transposed [16,8] weights -> [12,16]: the
// product of all 12 rows whatever their split 2*12*16*8 = 3072;
// 384 + 40 + 4*128*4 = 2472; 192*4 = 768.
// CHECK-NEXT: #3 tg.expert_linear flops=3072 read=2472 written=768{{$}}
// expert_linear_weight_grad of [12,16]^T [12,8] -> 4 x [16,8]:
// 2*12*16*8 = 3072; 768 + 384 + 40 = 1192; 4*128*4 = 2048.
// CHECK-NEXT: #4 tg.expert_linear_weight_grad flops=3072 read=1192 written=2048{{$}}

func.func @moe_ops(
    %x: tensor<6x8xf32> {tg.input = "x"},
    %probs: tensor<6x4xf32> {tg.input = "probs"},
    %w0: tensor<16x8xf32> {tg.param = "w0"},
    %w1: tensor<16x8xf32> {tg.param = "w1"},
    %w2: tensor<16x8xf32> {tg.param = "w2"},
    %w3: tensor<16x8xf32> {tg.param = "w3"}) -> tensor<f32>
    attributes {tg.model} {
  %0 = tg.top_k %probs {k = 2 : i64} : (tensor<6x4xf32>) -> tensor<6x2xi64>
  %rows, %positions, %offsets = tg.moe_route %0
      : (tensor<6x2xi64>) -> (tensor<12x1xi64>, tensor<6x2xi64>, tensor<5xi64>)
  %2 = tg.gather %x, %rows {axis = 0 : i64}
      : (tensor<6x8xf32>, tensor<12x1xi64>) -> tensor<12x8xf32>
  %3 = tg.expert_linear %2, %offsets, %w0, %w1, %w2, %w3 {transpose_weight = true}
      : (tensor<12x8xf32>, tensor<5xi64>, tensor<16x8xf32>, tensor<16x8xf32>,
         tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<12x16xf32>
  %4:4 = tg.expert_linear_weight_grad %3, %2, %offsets
      : (tensor<12x16xf32>, tensor<12x8xf32>, tensor<5xi64>)
      -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>)
  %5 = tg.reduce_sum %3 {axes = array<i64: 0, 1>} : tensor<12x16xf32> -> tensor<f32>
  return %5 : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

// CHECK-LABEL: op costs of @gradient_ops

// sum_to f32 [2,3,4] -> [4]: one per input element 24; 96; 16.
// CHECK-NEXT: #0 tg.sum_to flops=24 read=96 written=16{{$}}
// sum_to [2,3,4] -> [1,3,1]: 24; 96; 3*4 = 12.
// CHECK-NEXT: #1 tg.sum_to flops=24 read=96 written=12{{$}}
// relu_grad f32 [2,3,4]: 24; 96 + 96 = 192; 96.
// CHECK-NEXT: #2 tg.relu_grad flops=24 read=192 written=96{{$}}
// gelu_grad bf16 [6]: 15 per element (tanh(u) 6 + polynomial and product
// 9): 15 * 6 = 90; 12 + 12 = 24; 12.
// CHECK-NEXT: #3 tg.gelu_grad flops=90 read=24 written=12{{$}}
// tanh_grad f16 [2,4]: 3 per element: 3 * 8 = 24; 16 + 16 = 32; 16.
// CHECK-NEXT: #4 tg.tanh_grad flops=24 read=32 written=16{{$}}
// softmax_grad f32 [2,3,4]: 4 per element: 4 * 24 = 96; 192; 96.
// CHECK-NEXT: #5 tg.softmax_grad flops=96 read=192 written=96{{$}}
// layer_norm_grad [2,3,4], w [4]: 16 per input element (stats 5, g 1, two
// row means 1 + 2, dx 4, dw 2, db 1): 16 * 24 = 384; 96 + 16 + 96 = 208;
// 96 + 16 + 16 = 128.
// CHECK-NEXT: #6 tg.layer_norm_grad flops=384 read=208 written=128{{$}}
// embedding_grad i64 [2,3], f32 [2,3,5] -> [10,5]: one per gradient element
// 30; 48 + 120 = 168; 50*4 = 200.
// CHECK-NEXT: #7 tg.embedding_grad flops=30 read=168 written=200{{$}}
// attention_grad, non-causal: B=2, Tq=3, Tk=5, D=4, Dv=6: 15 scores per
// batch, (6*4 + 4*6 + 9) = 57 per score: 2 * 15 * 57 = 1710;
// q 96 + k 160 + v 240 + output 144 + grad 144 = 784; 96 + 160 + 240 = 496.
// CHECK-NEXT: #8 tg.attention_grad flops=1710 read=784 written=496{{$}}
// attention_grad, causal: B=2, T=3, D=4, Dv=6: 3*4/2 = 6 scores per batch:
// 2 * 6 * 57 = 684; 96 + 96 + 144 + 144 + 144 = 624; 96 + 96 + 144 = 336.
// CHECK-NEXT: #9 tg.attention_grad flops=684 read=624 written=336{{$}}
// cross_entropy_grad f32 [6,5], i64 [6], f32 scalar: 6 * 30 = 180;
// 120 + 48 + 4 = 172; 120.
// CHECK-NEXT: #10 tg.cross_entropy_grad flops=180 read=172 written=120{{$}}
// reduce_max_grad [2,3,4], output [2,4], grad [2,4]: 3 * 24 = 72;
// 96 + 32 + 32 = 160; 96.
// CHECK-NEXT: #11 tg.reduce_max_grad flops=72 read=160 written=96{{$}}
// slice_grad f32 [2,3] -> [4,6]: 0; 6*4 = 24; 24*4 = 96.
// CHECK-NEXT: #12 tg.slice_grad flops=0 read=24 written=96{{$}}

func.func @gradient_ops(
    %x: tensor<2x3x4xf32> {tg.input = "x"},
    %g: tensor<2x3x4xf32> {tg.input = "g"},
    %xb: tensor<6xbf16> {tg.input = "xb"},
    %gb: tensor<6xbf16> {tg.input = "gb"},
    %xh: tensor<2x4xf16> {tg.input = "xh"},
    %gh: tensor<2x4xf16> {tg.input = "gh"},
    %w: tensor<4xf32> {tg.param = "w"},
    %idx: tensor<2x3xi64> {tg.input = "idx"},
    %ge: tensor<2x3x5xf32> {tg.input = "ge"},
    %k: tensor<2x5x4xf32> {tg.input = "k"},
    %v: tensor<2x5x6xf32> {tg.input = "v"},
    %o: tensor<2x3x6xf32> {tg.input = "o"},
    %go: tensor<2x3x6xf32> {tg.input = "go"},
    %vc: tensor<2x3x6xf32> {tg.input = "vc"},
    %logits: tensor<6x5xf32> {tg.input = "logits"},
    %targets: tensor<6xi64> {tg.input = "targets"},
    %dl: tensor<f32> {tg.input = "dl"},
    %mx: tensor<2x4xf32> {tg.input = "mx"},
    %gmx: tensor<2x4xf32> {tg.input = "gmx"},
    %gs: tensor<2x3xf32> {tg.input = "gs"}) -> tensor<f32>
    attributes {tg.model} {
  %0 = tg.sum_to %x : tensor<2x3x4xf32> -> tensor<4xf32>
  %1 = tg.sum_to %x : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
  %2 = tg.relu_grad %x, %g : tensor<2x3x4xf32>
  %3 = tg.gelu_grad %xb, %gb : tensor<6xbf16>
  %4 = tg.tanh_grad %xh, %gh : tensor<2x4xf16>
  %5 = tg.softmax_grad %x, %g {axis = -1 : i64} : tensor<2x3x4xf32>
  %6:3 = tg.layer_norm_grad %x, %w, %g
      : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<2x3x4xf32>)
      -> (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %7 = tg.embedding_grad %idx, %ge
      : (tensor<2x3xi64>, tensor<2x3x5xf32>) -> tensor<10x5xf32>
  %8:3 = tg.attention_grad %x, %k, %v, %o, %go
      : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x6xf32>,
         tensor<2x3x6xf32>, tensor<2x3x6xf32>)
      -> (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x6xf32>)
  %9:3 = tg.attention_grad %x, %x, %vc, %o, %go {causal = true}
      : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x6xf32>,
         tensor<2x3x6xf32>, tensor<2x3x6xf32>)
      -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x6xf32>)
  %10 = tg.cross_entropy_grad %logits, %targets, %dl
      : (tensor<6x5xf32>, tensor<6xi64>, tensor<f32>) -> tensor<6x5xf32>
  %11 = tg.reduce_max_grad %x, %mx, %gmx {axes = array<i64: 1>}
      : (tensor<2x3x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x3x4xf32>
  %12 = tg.slice_grad %gs {offsets = array<i64: 1, 2>}
      : tensor<2x3xf32> -> tensor<4x6xf32>
  // The model convention needs a scalar float result; the incoming loss
  // cotangent serves.
  return %dl : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Activations of Kernels.def (FLOPs per element from TGOps.td)
//===----------------------------------------------------------------------===//

// CHECK-LABEL: op costs of @table_activations

// sigmoid f32 [2,3]: 4 per element (negate, exp, add, divide): 24; 24; 24.
// CHECK-NEXT: #0 tg.sigmoid flops=24 read=24 written=24{{$}}
// silu bf16 [8]: 5 per element (sigmoid and a product): 40; 16; 16.
// CHECK-NEXT: #1 tg.silu flops=40 read=16 written=16{{$}}
// sigmoid_grad f32 [2,3]: 7 per element (sigmoid 4, 1 - s, two
// products): 42; 24 + 24 = 48; 24.
// CHECK-NEXT: #2 tg.sigmoid_grad flops=42 read=48 written=24{{$}}
// silu_grad f16 [4]: 9 per element (sigmoid 4, 1 - s, x *, 1 +, two
// products): 36; 8 + 8 = 16; 8.
// CHECK-NEXT: #3 tg.silu_grad flops=36 read=16 written=8{{$}}
// softplus f32 [2,3]: 3 per element (exp, add, log): 18; 24; 24.
// CHECK-NEXT: #4 tg.softplus flops=18 read=24 written=24{{$}}
// softplus_grad f32 [2,3]: 5 per element (sigmoid 4, a product): 30;
// 24 + 24 = 48; 24.
// CHECK-NEXT: #5 tg.softplus_grad flops=30 read=48 written=24{{$}}
// swiglu bf16 [8]: silu (5) and the product: 48; 16 + 16 = 32; 16.
// CHECK-NEXT: #6 tg.swiglu flops=48 read=32 written=16{{$}}
// swiglu_grad f16 [4]: silu (5), two products, silu's gradient (9): 64;
// three operands 24; two results 16.
// CHECK-NEXT: #7 tg.swiglu_grad flops=64 read=24 written=16{{$}}
// CHECK-NOT: #8

func.func @table_activations(
    %x: tensor<2x3xf32> {tg.input = "x"},
    %g: tensor<2x3xf32> {tg.input = "g"},
    %b: tensor<8xbf16> {tg.input = "b"},
    %h: tensor<4xf16> {tg.input = "h"},
    %gh: tensor<4xf16> {tg.input = "gh"},
    %dl: tensor<f32> {tg.input = "dl"}) -> tensor<f32>
    attributes {tg.model} {
  %0 = tg.sigmoid %x : tensor<2x3xf32>
  %1 = tg.silu %b : tensor<8xbf16>
  %2 = tg.sigmoid_grad %x, %g : tensor<2x3xf32>
  %3 = tg.silu_grad %h, %gh : tensor<4xf16>
  %4 = tg.softplus %x : tensor<2x3xf32>
  %5 = tg.softplus_grad %x, %g : tensor<2x3xf32>
  %6 = tg.swiglu %b, %b : tensor<8xbf16>
  %7:2 = tg.swiglu_grad %h, %gh, %h : tensor<4xf16>
  return %dl : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

// CHECK-LABEL: op costs of @optimizer_ops

// Per element, SGD counts: update 2, + weight decay 2, + momentum 3,
// + nesterov 2. param [3,4] f32 = 12 elements, 48 bytes; lr f32 4 bytes;
// step i64 8 bytes.
// Plain SGD: 2 * 12 = 24; 48 + 48 + 4 + 8 = 108; 48.
// CHECK-NEXT: #0 tg.sgd_update flops=24 read=108 written=48{{$}}
// bf16 [8], weight decay, no momentum: (2 + 2) * 8 = 32;
// 16 + 16 + 4 + 8 = 44; 16.
// CHECK-NEXT: #1 tg.sgd_update flops=32 read=44 written=16{{$}}
// momentum with dampening, buffer [3,4]: (2 + 3) * 12 = 60;
// 48 + 48 + 4 + 8 + 48 = 156; new param + new buffer 48 + 48 = 96.
// CHECK-NEXT: #2 tg.sgd_update flops=60 read=156 written=96{{$}}
// momentum and weight decay: (2 + 2 + 3) * 12 = 84; 156; 96.
// CHECK-NEXT: #3 tg.sgd_update flops=84 read=156 written=96{{$}}
// nesterov momentum and weight decay: (2 + 2 + 3 + 2) * 12 = 108; 156; 96.
// CHECK-NEXT: #4 tg.sgd_update flops=108 read=156 written=96{{$}}
// AdamW: 14 per element (decay 1, m 3, v 4, rest 6): 14 * 12 = 168;
// param, grad, exp_avg, exp_avg_sq 4 * 48 + lr 4 + step 8 = 204;
// 3 * 48 = 144.
// CHECK-NEXT: #5 tg.adamw_update flops=168 read=204 written=144{{$}}
// AdamW with a bf16 grad [3,4] (24 bytes): 168; 48 + 24 + 48 + 48 + 4 + 8 =
// 180; 144.
// CHECK-NEXT: #6 tg.adamw_update flops=168 read=180 written=144{{$}}
// global_norm of f32 [3,4], bf16 [8], f16 scalar: 1 + 2 * (12 + 8 + 1) = 43;
// 48 + 16 + 2 = 66; f32 scalar 4.
// CHECK-NEXT: #7 tg.global_norm flops=43 read=66 written=4{{$}}

func.func @optimizer_ops(
    %p: tensor<3x4xf32> {tg.param = "p"},
    %g: tensor<3x4xf32> {tg.input = "g"},
    %lr: tensor<f32> {tg.input = "lr"},
    %step: tensor<i64> {tg.input = "step"},
    %buf: tensor<3x4xf32> {tg.input = "buf"},
    %pb: tensor<8xbf16> {tg.param = "pb"},
    %gb: tensor<8xbf16> {tg.input = "gb"},
    %m: tensor<3x4xf32> {tg.input = "m"},
    %vv: tensor<3x4xf32> {tg.input = "vv"},
    %gh: tensor<3x4xbf16> {tg.input = "gh"},
    %sh: tensor<f16> {tg.input = "sh"}) -> tensor<f32>
    attributes {tg.model} {
  %0 = tg.sgd_update %p, %g, %lr, %step
      : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<f32>, tensor<i64>)
      -> tensor<3x4xf32>
  %1 = tg.sgd_update %pb, %gb, %lr, %step {weight_decay = 0.01}
      : (tensor<8xbf16>, tensor<8xbf16>, tensor<f32>, tensor<i64>)
      -> tensor<8xbf16>
  %2:2 = tg.sgd_update %p, %g, %lr, %step, %buf {momentum = 0.9, dampening = 0.1}
      : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<f32>, tensor<i64>,
         tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>)
  %3:2 = tg.sgd_update %p, %g, %lr, %step, %buf
      {momentum = 0.9, weight_decay = 5.0e-4}
      : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<f32>, tensor<i64>,
         tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>)
  %4:2 = tg.sgd_update %p, %g, %lr, %step, %buf
      {momentum = 0.9, nesterov = true, weight_decay = 1.0e-4}
      : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<f32>, tensor<i64>,
         tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>)
  %5:3 = tg.adamw_update %p, %g, %m, %vv, %lr, %step
      : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
         tensor<f32>, tensor<i64>)
      -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>)
  %6:3 = tg.adamw_update %p, %gh, %m, %vv, %lr, %step {weight_decay = 0.0}
      : (tensor<3x4xf32>, tensor<3x4xbf16>, tensor<3x4xf32>, tensor<3x4xf32>,
         tensor<f32>, tensor<i64>)
      -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>)
  %7 = tg.global_norm %g, %gb, %sh
      : (tensor<3x4xf32>, tensor<8xbf16>, tensor<f16>) -> tensor<f32>
  return %7 : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Mixed precision
//===----------------------------------------------------------------------===//

// CHECK-LABEL: op costs of @amp_ops

// scale_loss bf16 scalar * f32 scalar: 1; 2 + 4 = 6; 4.
// CHECK-NEXT: #0 tg.scale_loss flops=1 read=6 written=4{{$}}
// unscale f16 [2,4] -> f32: 8 multiplies + 1 reciprocal = 9; 16 + 4 = 20;
// 8*4 = 32.
// CHECK-NEXT: #1 tg.unscale flops=9 read=20 written=32{{$}}
// unscale f32 [5]: 5 + 1 = 6; 20 + 4 = 24; 20.
// CHECK-NEXT: #2 tg.unscale flops=6 read=24 written=20{{$}}
// all_finite f16 [2,4], f32 [5]: 8 + 5 = 13; 16 + 20 = 36; i1 scalar 1.
// CHECK-NEXT: #3 tg.all_finite flops=13 read=36 written=1{{$}}
// update_loss_scale f32, i64, i1 scalars: 2; 4 + 8 + 1 = 13; 4 + 8 = 12.
// CHECK-NEXT: #4 tg.update_loss_scale flops=2 read=13 written=12{{$}}

func.func @amp_ops(
    %loss: tensor<bf16> {tg.input = "loss"},
    %scale: tensor<f32> {tg.input = "scale"},
    %gh: tensor<2x4xf16> {tg.input = "gh"},
    %g: tensor<5xf32> {tg.input = "g"},
    %tracker: tensor<i64> {tg.input = "tracker"}) -> tensor<f32>
    attributes {tg.model} {
  %0 = tg.scale_loss %loss, %scale : (tensor<bf16>, tensor<f32>) -> tensor<f32>
  %1 = tg.unscale %gh, %scale : (tensor<2x4xf16>, tensor<f32>) -> tensor<2x4xf32>
  %2 = tg.unscale %g, %scale : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
  %3 = tg.all_finite %gh, %g : (tensor<2x4xf16>, tensor<5xf32>) -> tensor<i1>
  %4:2 = tg.update_loss_scale %scale, %tracker, %3
      : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return %0 : tensor<f32>
}

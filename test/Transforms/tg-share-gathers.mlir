// RUN: tgc-opt %s --tg-share-gathers | FileCheck %s
// RUN: tgc-opt %s --tg-share-gathers=print-summary=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=SUMMARY

// zero3 with remat, by hand: w's part (4 of 8 elements on 2 ranks) is
// gathered in the forward pass, again for the block tg-remat recomputes
// in the backward pass (tg.remat), and once more for the gradient, each
// through its own cast to bf16. The third equals the second (the same
// argument through the same cast; the marks aside): its reader reads the
// second's copy, and the third gather and its cast are gone. The forward
// gather is not shared (its copy would live across the step), nor are
// gathers of another group or of another computation (v's part; w's part
// cast to f16).

// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<4xf32>, %[[V:[^:]*]]: tensor<4xf32>
// CHECK: %[[FC:.*]] = tg.cast %[[W]] {tg.recompute}
// CHECK-NEXT: %[[FG:.*]] = tg.all_gather %[[FC]] {tg.recompute, world_size = 2 : i64}
// CHECK: tg.fill {{.*}}tg.loss_seed
// CHECK-NEXT: %[[RC:.*]] = tg.cast %[[W]] {tg.recompute, tg.remat}
// CHECK-NEXT: %[[RG:.*]] = tg.all_gather %[[RC]] {tg.recompute, tg.remat, world_size = 2 : i64}
// CHECK-NEXT: %[[R:.*]] = tg.tanh %[[RG]]
// CHECK-NEXT: %[[B:.*]] = tg.mul %[[R]], %[[RG]]
// CHECK-NEXT: %[[VC:.*]] = tg.cast %[[V]]
// CHECK-NEXT: tg.all_gather %[[VC]] {world_size = 2 : i64}
// CHECK-NEXT: tg.all_gather %[[RC]] {rank_stride = 2 : i64, world_size = 2 : i64}
// CHECK-NEXT: %[[HC:.*]] = tg.cast %[[W]] : tensor<4xf32> -> tensor<4xf16>
// CHECK-NEXT: tg.all_gather %[[HC]] {world_size = 2 : i64}
// CHECK-NOT: tg.all_gather
// CHECK: return

// SUMMARY: tg-share-gathers: @step: 1 gathers of the backward pass share an earlier one's copy (8 bytes a step no longer sent)

func.func @step(%w: tensor<4xf32>, %v: tensor<4xf32>)
    -> (tensor<8xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<8xbf16>,
        tensor<8xbf16>, tensor<8xf16>) {
  %fc = tg.cast %w {tg.recompute} : tensor<4xf32> -> tensor<4xbf16>
  %fg = tg.all_gather %fc {tg.recompute, world_size = 2 : i64} : tensor<4xbf16> -> tensor<8xbf16>
  %seed = tg.fill 1.0 {tg.loss_seed} : tensor<f32>
  %rc = tg.cast %w {tg.recompute, tg.remat} : tensor<4xf32> -> tensor<4xbf16>
  %rg = tg.all_gather %rc {tg.recompute, tg.remat, world_size = 2 : i64} : tensor<4xbf16> -> tensor<8xbf16>
  %r = tg.tanh %rg : tensor<8xbf16>
  %bc = tg.cast %w : tensor<4xf32> -> tensor<4xbf16>
  %bg = tg.all_gather %bc {world_size = 2 : i64} : tensor<4xbf16> -> tensor<8xbf16>
  %b = tg.mul %r, %bg : (tensor<8xbf16>, tensor<8xbf16>) -> tensor<8xbf16>
  %vc = tg.cast %v : tensor<4xf32> -> tensor<4xbf16>
  %vg = tg.all_gather %vc {world_size = 2 : i64} : tensor<4xbf16> -> tensor<8xbf16>
  %sg = tg.all_gather %rc {world_size = 2 : i64, rank_stride = 2 : i64} : tensor<4xbf16> -> tensor<8xbf16>
  %hc = tg.cast %w : tensor<4xf32> -> tensor<4xf16>
  %hg = tg.all_gather %hc {world_size = 2 : i64} : tensor<4xf16> -> tensor<8xf16>
  return %fg, %b, %vg, %sg, %r, %hg : tensor<8xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<8xf16>
}

// RUN: tgc-opt %s --tg-overlap-collectives --split-input-file | FileCheck %s

// A bucket's update reads its reduce-scatter: it moves after the next
// reduce-scatter, so the link reduces the first bucket while the second
// bucket's gradient is computed. The compute between them stays; the last
// collective's readers stay where they are.
// CHECK-LABEL: func.func @updates
// CHECK: %[[R1:.*]] = tg.reduce_scatter sum %arg0
// CHECK-NEXT: %[[G2:.*]] = tg.matmul
// CHECK-NEXT: %[[R2:.*]] = tg.reduce_scatter sum %[[G2]]
// CHECK-NEXT: %[[U1:.*]] = tg.mul %[[R1]], %arg2
// CHECK-NEXT: %[[S1:.*]] = tg.sub %arg2, %[[U1]]
// CHECK-NEXT: %[[U2:.*]] = tg.mul %[[R2]], %arg3
// CHECK-NEXT: return %[[S1]], %[[U2]]
func.func @updates(%g1: tensor<8x4xf32>, %x: tensor<8x4xf32>,
                   %p1: tensor<4x4xf32>, %p2: tensor<4x4xf32>)
    -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %r1 = tg.reduce_scatter sum %g1 {world_size = 2 : i64} : tensor<8x4xf32> -> tensor<4x4xf32>
  %u1 = tg.mul %r1, %p1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %s1 = tg.sub %p1, %u1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %g2 = tg.matmul %x, %p2 : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %r2 = tg.reduce_scatter sum %g2 {world_size = 2 : i64} : tensor<8x4xf32> -> tensor<4x4xf32>
  %u2 = tg.mul %r2, %p2 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %s1, %u2 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// The next collective reads what depends on the first (a gather of the
// updated part): nothing moves, the gather would be delayed.
// CHECK-LABEL: func.func @chained
// CHECK: tg.reduce_scatter
// CHECK-NEXT: tg.mul
// CHECK-NEXT: tg.all_gather
func.func @chained(%g: tensor<8x4xf32>, %p: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %r = tg.reduce_scatter sum %g {world_size = 2 : i64} : tensor<8x4xf32> -> tensor<4x4xf32>
  %u = tg.mul %r, %p : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %w = tg.all_gather %u {world_size = 2 : i64} : tensor<4x4xf32> -> tensor<8x4xf32>
  return %w : tensor<8x4xf32>
}

// -----

// One rank sends nothing: its collectives are copies, nothing moves.
// CHECK-LABEL: func.func @one_rank
// CHECK: tg.reduce_scatter
// CHECK-NEXT: tg.mul
// CHECK-NEXT: tg.reduce_scatter
func.func @one_rank(%g: tensor<4x4xf32>, %p: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %r1 = tg.reduce_scatter sum %g {world_size = 1 : i64} : tensor<4x4xf32> -> tensor<4x4xf32>
  %u = tg.mul %r1, %p : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r2 = tg.reduce_scatter sum %p {world_size = 1 : i64} : tensor<4x4xf32> -> tensor<4x4xf32>
  return %u, %r2 : tensor<4x4xf32>, tensor<4x4xf32>
}

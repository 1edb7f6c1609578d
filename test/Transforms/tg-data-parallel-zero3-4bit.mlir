// RUN: tgc-opt %s --tg-quantize-frozen="type=nf4 block-size=16" --tg-autodiff --tg-optimizer --tg-data-parallel="mode=zero3 world-size=2" | FileCheck %s

// zero3 splits a frozen 4-bit weight as it splits every other parameter
// (FSDP-QLoRA's sharded base): its codes and scales are each rank's part
// of the flattened, zero-padded whole, gathered (as bytes, in one bucket
// of ui8 codes and absmax) before each pass's product reads them; the
// scalar offset stays whole. w is 6 x 8 = 48 weights: 24 bytes of codes,
// 12 a rank; 3 blocks of 16, their absmax codes padded to 4, 2 a rank;
// one nested block, its absmax padded to 2, 1 a rank.
func.func @net(%x: tensor<4x8xf32> {tg.input = "x"},
               %y: tensor<4xi64> {tg.input = "y"},
               %u: tensor<8x8xf32> {tg.param = "u"},
               %w: tensor<6x8xf32> {tg.param = "w", tg.frozen},
               %v: tensor<6x2xf32> {tg.param = "v"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.matmul %x, %u : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = tg.matmul %0, %w {transpose_rhs = true} : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
  %2 = tg.tanh %1 : tensor<4x6xf32>
  %3 = tg.matmul %2, %v : (tensor<4x6xf32>, tensor<6x2xf32>) -> tensor<4x2xf32>
  %4 = tg.cross_entropy %3, %y : (tensor<4x2xf32>, tensor<4xi64>) -> tensor<f32>
  return %4 : tensor<f32>
}

// CHECK-LABEL: func.func @net_train_step(
// CHECK-SAME: %[[CODES:[^:]*]]: tensor<12xui8> {tg.frozen, tg.param = "w", tg.quant4 = {absmax = "w.absmax", block_size = 16 : i64, cols = 8 : i64, nested_absmax = "w.nested_absmax", offset = "w.nested_offset", rows = 6 : i64, type = "nf4"}, tg.shard_of = array<i64: 24>}
// CHECK-SAME: %[[ABSMAX:[^:]*]]: tensor<2xui8> {tg.frozen, tg.param = "w.absmax", tg.shard_of = array<i64: 3>}
// CHECK-SAME: %[[NESTED:[^:]*]]: tensor<1xf32> {tg.frozen, tg.param = "w.nested_absmax", tg.shard_of = array<i64: 1>}
// CHECK-SAME: %[[OFFSET:[^:]*]]: tensor<f32> {tg.frozen, tg.param = "w.nested_offset"}

// The forward pass: codes and absmax gathered together, the whole codes
// and absmax sliced out; the nested absmax with the f32 parameters.
// CHECK: %[[SENT:.*]] = tg.concat %[[CODES]], %[[ABSMAX]] {axis = 0 : i64, tg.recompute} : (tensor<12xui8>, tensor<2xui8>) -> tensor<14xui8>
// CHECK-NEXT: %[[ALL:.*]] = tg.all_gather %[[SENT]] {tg.recompute, world_size = 2 : i64} : tensor<14xui8> -> tensor<28xui8>
// CHECK-NEXT: %[[ROWS:.*]] = tg.reshape %[[ALL]] {tg.recompute} : tensor<28xui8> -> tensor<2x14xui8>
// CHECK-NEXT: %[[COLS:.*]]:2 = tg.split %[[ROWS]] {axis = 1 : i64, tg.recompute} : tensor<2x14xui8> -> tensor<2x12xui8>, tensor<2x2xui8>
// CHECK-NEXT: %[[WC:.*]] = tg.reshape %[[COLS]]#0 {tg.recompute} : tensor<2x12xui8> -> tensor<24xui8>
// CHECK-NEXT: %[[PA:.*]] = tg.reshape %[[COLS]]#1 {tg.recompute} : tensor<2x2xui8> -> tensor<4xui8>
// CHECK-NEXT: %[[WA:.*]] = tg.slice %[[PA]] {offsets = array<i64: 0>, tg.recompute} : tensor<4xui8> -> tensor<3xui8>
// CHECK: tg.matmul_4bit %{{.*}}, %[[WC]], %[[WA]], %{{.*}}, %{{.*}}, %{{.*}}, %[[OFFSET]] {block_size = 16 : i64, cols = 8 : i64, rows = 6 : i64} : (tensor<4x8xf32>, tensor<24xui8>, tensor<3xui8>,

// The backward pass gathers them again for the input's gradient.
// CHECK: tg.cross_entropy_grad
// CHECK: tg.all_gather %{{.*}} {world_size = 2 : i64} : tensor<14xui8> -> tensor<28xui8>
// CHECK: tg.matmul_4bit {{.*}} {block_size = 16 : i64, cols = 8 : i64, rows = 6 : i64, transpose_rhs = false} : (tensor<4x6xf32>, tensor<24xui8>, tensor<3xui8>,
// CHECK: return

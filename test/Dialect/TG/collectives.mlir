// RUN: tgc-opt %s | tgc-opt | FileCheck %s
// RUN: tgc-opt %s --tg-model-stats=per-op=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=COST

// The collectives round-trip, and their cost is what one rank sends by the
// ring algorithms: all_reduce 2 (N - 1) / N of the tensor, reduce_scatter
// (N - 1) / N of its operand, all_gather (N - 1) / N of its result, shard
// nothing. Each expected value is worked out by hand as `flops; read;
// written; sent`.

// CHECK-LABEL: func.func @collectives
// CHECK: tg.all_reduce mean %{{.*}} {world_size = 4 : i64} : tensor<8x2xf32>
// CHECK: tg.all_reduce sum %{{.*}} {world_size = 4 : i64} : tensor<f32>
// CHECK: tg.all_reduce min %{{.*}} {world_size = 4 : i64} : tensor<f32>
// CHECK: tg.reduce_scatter mean %{{.*}} {world_size = 4 : i64} : tensor<8x2xbf16> -> tensor<2x2xbf16>
// CHECK: tg.all_gather %{{.*}} {world_size = 4 : i64} : tensor<2x2xbf16> -> tensor<8x2xbf16>
// CHECK: tg.shard %{{.*}} {world_size = 4 : i64} : tensor<8x2xf32> -> tensor<2x2xf32>
// A group of ranks apart (hybrid sharding's replicas) keeps its stride; the
// default stride 1 is not printed.
// CHECK: tg.all_reduce mean %{{.*}} {rank_stride = 2 : i64, world_size = 2 : i64} : tensor<2x2xbf16>

// COST-LABEL: op costs of @collectives
// all_reduce f32 [8,2] over 4 ranks: 16; 64; 64; 2 * 64 * 3 / 4 = 96.
// COST-NEXT: #0 tg.all_reduce flops=16 read=64 written=64 sent=96{{$}}
// all_reduce of a scalar: 1; 4; 4; 2 * 4 * 3 / 4 = 6.
// COST-NEXT: #1 tg.all_reduce flops=1 read=4 written=4 sent=6{{$}}
// COST-NEXT: #2 tg.all_reduce flops=1 read=4 written=4 sent=6{{$}}
// reduce_scatter bf16 [8,2] -> [2,2]: 16; 32; 8; 32 * 3 / 4 = 24.
// COST-NEXT: #3 tg.reduce_scatter flops=16 read=32 written=8 sent=24{{$}}
// all_gather bf16 [2,2] -> [8,2]: 0; 8; 32; 32 * 3 / 4 = 24.
// COST-NEXT: #4 tg.all_gather flops=0 read=8 written=32 sent=24{{$}}
// shard: 0; 64; 16; nothing sent.
// COST-NEXT: #5 tg.shard flops=0 read=64 written=16{{$}}
// all_reduce bf16 [2,2] over a group of 2: 4; 8; 8; 2 * 8 * 1 / 2 = 8.
// COST-NEXT: #6 tg.all_reduce flops=4 read=8 written=8 sent=8{{$}}

func.func @collectives(%x: tensor<8x2xf32> {tg.input = "x"},
                       %h: tensor<8x2xbf16> {tg.input = "h"},
                       %s: tensor<f32> {tg.input = "s"}) -> tensor<f32>
    attributes {tg.model} {
  %0 = tg.all_reduce mean %x {world_size = 4 : i64} : tensor<8x2xf32>
  %1 = tg.all_reduce sum %s {world_size = 4 : i64} : tensor<f32>
  %2 = tg.all_reduce min %s {world_size = 4 : i64} : tensor<f32>
  %3 = tg.reduce_scatter mean %h {world_size = 4 : i64} : tensor<8x2xbf16> -> tensor<2x2xbf16>
  %4 = tg.all_gather %3 {world_size = 4 : i64} : tensor<2x2xbf16> -> tensor<8x2xbf16>
  %5 = tg.shard %x {world_size = 4 : i64} : tensor<8x2xf32> -> tensor<2x2xf32>
  %6 = tg.all_reduce mean %3 {world_size = 2 : i64, rank_stride = 2 : i64} : tensor<2x2xbf16>
  return %1 : tensor<f32>
}

// RUN: tgc-opt %s --tg-estimate="device=%S/Inputs/estimate-links.json per-op=true" -o /dev/null 2>&1 | FileCheck %s
// RUN: tgc-opt %s --tg-estimate=device=h100 -o /dev/null 2>&1 | FileCheck %s --check-prefix=H100
// RUN: echo '{"memory_bandwidth": 1e9, "vector_flops": 1e9, "matmul_flops": {"f32": 1e9}, "links": {"intra_node": "nvlink9"}}' > %t.name.json
// RUN: not tgc-opt %s --tg-estimate=device=%t.name.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: echo '{"memory_bandwidth": 1e9, "vector_flops": 1e9, "matmul_flops": {"f32": 1e9}, "links": {"inter_node": {"bandwidth": 1e9}}}' > %t.latency.json
// RUN: not tgc-opt %s --tg-estimate=device=%t.latency.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=LATENCY
// RUN: echo '{"memory_bandwidth": 1e9, "vector_flops": 1e9, "matmul_flops": {"f32": 1e9}, "links": {"gpus_per_node": 0}}' > %t.gpus.json
// RUN: not tgc-opt %s --tg-estimate=device=%t.gpus.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=GPUS
// RUN: echo '{"memory_bandwidth": 1e9, "vector_flops": 1e9, "matmul_flops": {"f32": 1e9}, "links": {"intra": "pcie4"}}' > %t.field.json
// RUN: not tgc-opt %s --tg-estimate=device=%t.field.json -o /dev/null 2>&1 | FileCheck %s --check-prefix=FIELD

// Collectives over the links, worked out by hand. The toy device: 1 GB/s
// of memory, 1 GFLOP/s; 4 GPUs a node on a link of 1 GB/s and 1 us a
// step ("fast"), nodes on ports of 0.1 GB/s and 10 us a step ("slow").
// Across nodes a ring's bandwidth is min(1 GB/s, 4 ports x 0.1 GB/s) =
// 0.4 GB/s, its step 10 us.
//
// The two streams: the collectives run in order on one, the other ops in
// order on the other, each op once what it reads is done; a collective
// also after the ops before it, which first wait for the collective
// before it (one in flight, as the runtime joins them).

// CHECK: step @step: 177.80 us, {{.*}} 6 kernels; communication 165.51 us, 163.91 us of it not hidden
// CHECK: tg.all_reduce 1
// CHECK-SAME: 80.48 us  45.3%  link
// CHECK: step: 177.80 us
// CHECK: communication: 165.51 us a step over fast + slow (8 ranks, 4 a node), 163.91 us of it not hidden by compute on a second stream
// CHECK-LABEL: ops of @step
// The gather of 1024 f32 (4096 bytes) over 4 ranks, one node, in a ring:
// 3 steps of 1 us and 3/4 x 4096 bytes at 1 GB/s = 3 + 3.072 us; its
// memory time (1024 + 4096 bytes) is 5.12 us. It starts at once.
// CHECK-NEXT: #0 tg.all_gather {{.*}} time=6.072us link link=6.072us (ring, fast) start=0us
// The matmul does not wait for it.
// CHECK-NEXT: #1 tg.matmul {{.*}} time=1.024us compute start=0us
// The add reads the gathered tensor: it starts when the gather is done.
// CHECK-NEXT: #2 tg.add {{.*}} time=12.29us memory start=6.072us
// The all-reduce over 8 ranks (two nodes) of 4096 bytes, at 0.4 GB/s and
// 10 us a step: a ring takes 2 x 7 steps, 140 us + 14/8 x 10.24 us =
// 157.92 us; the double binary tree 2 x log2(8) steps, 60 us + 2 x
// 10.24 us = 80.48 us, the faster. It starts when the add is done
// (6.072 + 12.288 = 18.36 us).
// CHECK-NEXT: #3 tg.all_reduce {{.*}} time=80.48us link link=80.48us (tree, fast + slow) start=18.36us
// The GELU needs nothing of the all-reduce: it runs beside it.
// CHECK-NEXT: #4 tg.gelu {{.*}} time=0.576us compute start=18.36us
// The reduce-scatter waits for the all-reduce, and so does the compute
// stream before it (18.36 + 80.48 = 98.84 us):
// a ring of 7 steps, 70 us + 7/8 x 10.24 us = 78.96 us; the step ends
// with it at 177.80 us, of which the compute stream's ops take 13.888 us.
// CHECK-NEXT: #5 tg.reduce_scatter {{.*}} time=78.96us link link=78.96us (ring, fast + slow) start=98.84us

// The built-in h100 device: NVLink 4 (450 GB/s) inside a node of 8, so
// 8 ranks never cross to the network.
// H100: communication: {{.*}} a step over nvlink4 (8 ranks, 8 a node)

// NAME: error: tg-estimate: device file '{{.*}}.json': unknown link 'nvlink9' in 'links.intra_node' (built in: nvlink4, nvlink3, pcie5, pcie4, ib-ndr, ib-hdr; or an object of bandwidth and latency)
// LATENCY: error: tg-estimate: device file '{{.*}}.json': 'links.inter_node.latency' must be a positive number (seconds)
// GPUS: error: tg-estimate: device file '{{.*}}.json': 'links.gpus_per_node' must be a whole number from 1 to 1048576
// FIELD: error: tg-estimate: device file '{{.*}}.json': unknown field 'links.intra' (expected gpus_per_node, intra_node, inter_node)

func.func @step(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>,
                %p: tensor<256xf32>, %g: tensor<1024xf32>)
    -> (tensor<4x16xf32>, tensor<1024xf32>, tensor<128xf32>) {
  %ag = tg.all_gather %p {world_size = 4 : i64} : tensor<256xf32> -> tensor<1024xf32>
  %y = tg.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = tg.add %ag, %g : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  %ar = tg.all_reduce sum %s {world_size = 8 : i64} : tensor<1024xf32>
  %e = tg.gelu %y : tensor<4x16xf32>
  %rs = tg.reduce_scatter sum %g {world_size = 8 : i64} : tensor<1024xf32> -> tensor<128xf32>
  return %e, %ar, %rs : tensor<4x16xf32>, tensor<1024xf32>, tensor<128xf32>
}

// Groups of ranks apart (hybrid sharding's replicas: the ranks holding the
// same part). On the toy device (4 GPUs a node):
// CHECK-LABEL: ops of @replicas
// 2 ranks 4 apart: one GPU of the group on each node, whose ring crosses
// only the network at one port, 0.1 GB/s and 10 us a step: the ring's
// 2 x 1 steps, 20 us + 2/2 x 40.96 us = 60.96 us (the tree's 101.92 us).
// CHECK-NEXT: #0 tg.all_reduce {{.*}} time=60.96us link link=60.96us (ring, slow) start=0us
// 4 ranks 2 apart span two nodes, two of the group on each: its ring has
// two ports of a node, min(1 GB/s, 2 x 0.1 GB/s) = 0.2 GB/s at 10 us a
// step. The ring: 2 x 3 steps, 60 us + 6/4 x 20.48 us = 90.72 us; the
// tree 2 x 2 steps, 40 us + 2 x 20.48 us = 80.96 us, the faster. It waits
// for the stream (60.96 us).
// CHECK-NEXT: #1 tg.all_reduce {{.*}} time=80.96us link link=80.96us (tree, fast + slow) start=60.96us
// 2 ranks 2 apart stay inside a node of 4: 1 us + 1/2 x 4.096 us on the
// link, under its memory time (2048 + 4096 bytes at 1 GB/s).
// CHECK-NEXT: #2 tg.all_gather {{.*}} time=6.144us memory link=3.048us (ring, fast) start=141.9us

func.func @replicas(%g: tensor<1024xf32>, %p: tensor<512xf32>)
    -> (tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>) {
  %a = tg.all_reduce mean %g {world_size = 2 : i64, rank_stride = 4 : i64} : tensor<1024xf32>
  %b = tg.all_reduce mean %g {world_size = 4 : i64, rank_stride = 2 : i64} : tensor<1024xf32>
  %c = tg.all_gather %p {world_size = 2 : i64, rank_stride = 2 : i64} : tensor<512xf32> -> tensor<1024xf32>
  return %a, %b, %c : tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>
}

// RUN: tgc-opt %s --split-input-file --tg-plan-memory="memory-report=%t.json" -o /dev/null 2>&1 | FileCheck %s
// RUN: FileCheck %s --input-file=%t.json --check-prefix=JSON
// RUN: FileCheck %s --input-file=%t.json.trace.json --check-prefix=TRACE

// A hand-sized step: every tensor is 256 bytes (64 f32, or one scalar after
// 256-byte alignment). Lifetimes in the schedule (op index):
//   A = mul      [0, 2]  (read through its reshape at #2)
//   E = exp      [2, 5]  (read through its reshape at #5): A dies at #2, so
//                        exp writes over it (InPlaceOpInterface)
//   L = loss     [3, 9]  (returned)
//   D = grad     [5, 8]  E dies at #5: the mul writes over it too
//   LR, T fills  [6, 8], [7, 8]
// So A, E and D share one buffer [0, 8]. Live bytes peak at #7 with L, D,
// LR, T: 1024. Placed largest-first (all equal, by start) with best fit:
// ADE@0, L@256, LR@512, T@768, so the arena is 1024 bytes too. The update
// of w is written in place.

func.func @step(%w: tensor<64xf32> {tg.param = "w"},
                %x: tensor<64xf32> {tg.input = "x"})
    -> (tensor<f32> {tg.loss}, tensor<64xf32> {tg.update = "w"}) attributes {tg.train_step} {
  %a = tg.mul %x, %w : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %r = tg.reshape %a : tensor<64xf32> -> tensor<8x8xf32>
  %e = tg.exp %r : tensor<8x8xf32>
  %l = tg.reduce_sum %e {axes = array<i64: 0, 1>} : tensor<8x8xf32> -> tensor<f32>
  %g = tg.reshape %e : tensor<8x8xf32> -> tensor<64xf32>
  %d = tg.mul %g, %x : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %lr = tg.fill 0.1 : tensor<f32>
  %t = tg.fill 1.0 : tensor<i64>
  %w1 = tg.sgd_update %w, %d, %lr, %t : (tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<i64>) -> tensor<64xf32>
  return %l, %w1 : tensor<f32>, tensor<64xf32>
}

// CHECK-LABEL: memory plan of @step (10 ops, 4 transient buffers, alignment 256)
// CHECK-NEXT: persistent: 512 B
// CHECK-NEXT: params 256 B
// CHECK-NEXT: optimizer_state 0 B
// CHECK-NEXT: inputs 256 B
// CHECK-NEXT: transient arena: 1.00 KiB (1024 bytes)
// CHECK-NEXT: peak of live transient bytes: 1.00 KiB (1024 bytes), arena/peak 1.0000
// CHECK-NEXT: total: 1.50 KiB
// CHECK-NEXT: in-place reuse: 2 results written over a dying operand
// CHECK-NEXT: peak at op #7 tg.fill
// CHECK-NEXT: params 256 B
// CHECK-NEXT: optimizer_state 0 B
// CHECK-NEXT: inputs 256 B
// CHECK-NEXT: activations 256 B
// CHECK-NEXT: grads 256 B
// CHECK-NEXT: workspace 512 B
// CHECK-NEXT: largest buffers live at the peak (4 live):
// The shared buffer holds the gradient at the peak.
// CHECK-NEXT: 256 B grads #0 tg.mul (line {{[0-9]+}}), live #0..#8

// JSON: "function": "step",
// JSON: "arena_bytes": 1024,
// JSON: "peak_live_bytes": 1024,
// JSON: "persistent_bytes": 512,
// JSON: "reused_buffers": 2,
// JSON: "op_index": 7,
// JSON: "buffers": [
// JSON: "op_index": 0,
// JSON: "op": "tg.mul
// JSON: "kind": "activations",
// JSON: "values": 3,
// JSON: "bytes": 256,
// JSON: "offset": 0,
// JSON: "start": 0,
// JSON: "end": 8
// JSON: "op_index": 3,
// JSON: "bytes": 4,
// JSON: "offset": 256,
// JSON: "start": 3,
// JSON: "end": 9
// JSON: "op_index": 6,
// JSON: "kind": "workspace",
// JSON: "offset": 512,
// JSON: "op_index": 7,
// JSON: "offset": 768,
// The in-place update has no buffer of its own.
// JSON-NOT: "op_index": 8,

// TRACE: {"traceEvents":[{"name":"live bytes","ph":"C","ts":0,"pid":0,"args":{"activations":256,"grads":0,"workspace":0}}
// TRACE-SAME: "name":"live bytes","ph":"C","ts":7,"pid":0,"args":{"activations":256,"grads":256,"workspace":512}

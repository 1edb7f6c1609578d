// RUN: tgc-opt %s --split-input-file --allow-unregistered-dialect --tg-plan-memory --verify-diagnostics -o /dev/null
// RUN: not tgc-opt %s --split-input-file --tg-plan-memory=alignment=48 -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALIGN
// ALIGN: error: tg-plan-memory: alignment must be a power of two, found 48

// An update that a later op still reads cannot be written in place.
func.func @read_after_update(%w: tensor<64xf32> {tg.param = "w"})
    -> (tensor<f32> {tg.loss}, tensor<64xf32> {tg.update = "w"}) attributes {tg.train_step} {
  // expected-error @+1 {{'tg.neg' op cannot update 'w' in place: it is read after this op writes it}}
  %w1 = tg.neg %w : tensor<64xf32>
  // expected-note @+1 {{read here}}
  %l = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<64xf32> -> tensor<f32>
  return %l, %w1 : tensor<f32>, tensor<64xf32>
}

// -----

// An op whose kernel cannot write over the operand it reads (it does not
// implement InPlaceOpInterface for it) may not update that operand in place.
func.func @matmul_in_place(%w: tensor<8x8xf32> {tg.param = "w"})
    -> (tensor<f32> {tg.loss}, tensor<8x8xf32> {tg.update = "w"}) attributes {tg.train_step} {
  %l = tg.fill 0.0 : tensor<f32>
  // expected-error @+2 {{'tg.matmul' op cannot update 'w' in place: the op reads it as operand #1 and cannot write its result #0 over it (InPlaceOpInterface)}}
  // expected-note @+1 {{read here}}
  %w1 = tg.matmul %w, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %l, %w1 : tensor<f32>, tensor<8x8xf32>
}

// -----

// Ops with regions are not planned yet: a value used only inside a region
// would get no lifetime.
func.func @region(%w: tensor<64xf32> {tg.param = "w"})
    -> (tensor<f32> {tg.loss}) attributes {tg.train_step} {
  // expected-error @+1 {{'test.region' op has regions, which the memory planner does not plan yet}}
  %l = "test.region"(%w) ({
    "test.use"(%w) : (tensor<64xf32>) -> ()
  }) : (tensor<64xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{tg-plan-memory found no function marked tg.train_step or tg.model to plan}}
module {
}

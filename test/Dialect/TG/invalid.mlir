// Diagnostics of the tg op verifiers, the #tg.init attribute and the tg.model / argument-attribute conventions.
// RUN: tgc-opt %s --split-input-file --verify-diagnostics

//===----------------------------------------------------------------------===//
// ODS type constraints
//===----------------------------------------------------------------------===//

func.func @dynamic_shape(%x: tensor<?xf32>) {
  // expected-error @+1 {{'tg.neg' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<?xf32>'}}
  %0 = tg.neg %x : tensor<?xf32>
  return
}

// -----

func.func @f64_operand(%x: tensor<4xf64>) {
  // expected-error @+1 {{'tg.exp' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4xf64>'}}
  %0 = tg.exp %x : tensor<4xf64>
  return
}

// -----

// Arithmetic takes integers too, but not predicates.
func.func @predicate_arithmetic(%x: tensor<4xi1>, %y: tensor<4xi1>) {
  // expected-error @+1 {{'tg.add' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = tg.add %x, %y : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return
}

// -----

func.func @integer_for_float(%x: tensor<4xi64>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'tg.exp' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4xi64>'}}
  %0 = tg.exp %x : tensor<4xi64>
  return
}

// -----

func.func @unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{'tg.relu' op operand #0 must be statically shaped tensor}}
  %0 = "tg.relu"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @float_indices(%t: tensor<10x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{'tg.embedding' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3xf32>'}}
  %0 = tg.embedding %t, %i : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @i8_indices(%l: tensor<3x10xf32>, %t: tensor<3xi8>) {
  // expected-error @+1 {{'tg.cross_entropy' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<3xi8>'}}
  %0 = tg.cross_entropy %l, %t : (tensor<3x10xf32>, tensor<3xi8>) -> tensor<f32>
  return
}

// -----

func.func @non_scalar_loss(%l: tensor<3x10xf32>, %t: tensor<3xi64>) {
  // expected-error @+1 {{'tg.cross_entropy' op result #0 must be 0D tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<1xf32>'}}
  %0 = tg.cross_entropy %l, %t : (tensor<3x10xf32>, tensor<3xi64>) -> tensor<1xf32>
  return
}

// -----

func.func @where_non_bool_condition(%c: tensor<4xi32>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.where' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xi32>'}}
  %0 = tg.where %c, %x, %x : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_to_f64(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.cast' op result #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit signless integer or 32-bit signless integer or 8-bit signless integer or 1-bit signless integer values, but got 'tensor<4xf64>'}}
  %0 = tg.cast %x : tensor<4xf32> -> tensor<4xf64>
  return
}

// -----

func.func @cast_from_i16(%x: tensor<4xi16>) {
  // expected-error @+1 {{'tg.cast' op operand #0 must be statically shaped tensor}}
  %0 = tg.cast %x : tensor<4xi16> -> tensor<4xf32>
  return
}

// -----

func.func @constant_f64() {
  // expected-error @+1 {{'tg.constant' op result #0 must be statically shaped tensor}}
  %0 = tg.constant dense<1.0> : tensor<2xf64>
  return
}

// -----

func.func @fill_dynamic() {
  // expected-error @+1 {{'tg.fill' op result #0 must be statically shaped tensor}}
  %0 = tg.fill 1.0 : tensor<?xf32>
  return
}

// -----

func.func @unary_type_mismatch(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.relu' op requires the same type for all operands and results}}
  %0 = "tg.relu"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

func.func @relu_grad_type_mismatch(%x: tensor<4xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'tg.relu_grad' op requires the same type for all operands and results}}
  %0 = "tg.relu_grad"(%x, %g) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @sgd_lr_not_f32(%p: tensor<4xf32>, %lr: tensor<f16>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op operand #2 must be 0D tensor of 32-bit float values, but got 'tensor<f16>'}}
  %0 = tg.sgd_update %p, %p, %lr, %s
      : (tensor<4xf32>, tensor<4xf32>, tensor<f16>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

func.func @sgd_step_not_i64(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i32>) {
  // expected-error @+1 {{'tg.sgd_update' op operand #3 must be 0D tensor of 64-bit signless integer values, but got 'tensor<i32>'}}
  %0 = tg.sgd_update %p, %p, %lr, %s
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i32>) -> tensor<4xf32>
  return
}

// -----

func.func @scale_loss_bf16_scale(%l: tensor<f32>, %s: tensor<bf16>) {
  // expected-error @+1 {{'tg.scale_loss' op operand #1 must be 0D tensor of 32-bit float values, but got 'tensor<bf16>'}}
  %0 = tg.scale_loss %l, %s : (tensor<f32>, tensor<bf16>) -> tensor<f32>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise ops with broadcasting
//===----------------------------------------------------------------------===//

// -----

func.func @add_not_broadcastable(%x: tensor<4x8xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'tg.add' op operand shapes [4, 8] and [4] are not broadcast-compatible}}
  %0 = tg.add %x, %y : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @sub_wrong_result_shape(%x: tensor<4x8xf32>, %y: tensor<8xf32>) {
  // expected-error @+1 {{'tg.sub' op result shape [8, 8] does not match the broadcast shape [4, 8]}}
  %0 = tg.sub %x, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @swiglu_types_differ(%g: tensor<4xf32>, %u: tensor<4xbf16>) {
  // expected-error @+1 {{'tg.swiglu' op requires the same type for all operands and results}}
  %0 = "tg.swiglu"(%g, %u) : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

func.func @swiglu_grad_types_differ(%g: tensor<4xf32>, %u: tensor<4xf32>,
                                    %d: tensor<8xf32>) {
  // expected-error @+1 {{'tg.swiglu_grad' op failed to verify that all of {gate, up, grad, gate_grad, up_grad} have same type}}
  %0:2 = "tg.swiglu_grad"(%g, %u, %d) : (tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @mul_result_keeps_size_one(%x: tensor<4x1xf32>, %y: tensor<4x1xf32>) {
  // expected-error @+1 {{'tg.mul' op result shape [4, 8] does not match the broadcast shape [4, 1]}}
  %0 = tg.mul %x, %y : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @div_operand_element_types(%x: tensor<4xbf16>, %y: tensor<4xf16>) {
  // expected-error @+1 {{'tg.div' op element types must match, found 'bf16' and 'f16'}}
  %0 = tg.div %x, %y : (tensor<4xbf16>, tensor<4xf16>) -> tensor<4xbf16>
  return
}

// -----

// A 16-bit operand beside f32 computes in f32: the result cannot be 16-bit.
func.func @add_mixed_result_element_type(%x: tensor<4xf32>, %y: tensor<4xbf16>) {
  // expected-error @+1 {{'tg.add' op element types must match, found 'f32' and 'bf16'}}
  %0 = tg.add %x, %y : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xbf16>
  return
}

// -----

func.func @maximum_result_element_type(%x: tensor<4xbf16>, %y: tensor<4xbf16>) {
  // expected-error @+1 {{'tg.maximum' op element types must match, found 'bf16' and 'f32'}}
  %0 = tg.maximum %x, %y : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

func.func @minimum_not_broadcastable(%x: tensor<2x3xf32>, %y: tensor<3x2xf32>) {
  // expected-error @+1 {{'tg.minimum' op operand shapes [2, 3] and [3, 2] are not broadcast-compatible}}
  %0 = tg.minimum %x, %y : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @where_element_types(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error @+1 {{'tg.where' op element types must match, found 'f32' and 'f16'}}
  %0 = tg.where %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @where_not_broadcastable(%c: tensor<4x1xi1>, %x: tensor<1x8xf32>, %y: tensor<3x8xf32>) {
  // expected-error @+1 {{'tg.where' op operand #2 of shape [3, 8] does not broadcast with [4, 8], the broadcast of the operands before it}}
  %0 = tg.where %c, %x, %y : (tensor<4x1xi1>, tensor<1x8xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @where_wrong_result_shape(%c: tensor<4x1xi1>, %x: tensor<8xf32>, %y: tensor<f32>) {
  // expected-error @+1 {{'tg.where' op result shape [8] does not match the broadcast shape [4, 8]}}
  %0 = tg.where %c, %x, %y : (tensor<4x1xi1>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

// -----

func.func @matmul_rank1(%x: tensor<8xf32>, %w: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.matmul' op operands must have rank >= 2, found ranks 1 and 2}}
  %0 = tg.matmul %x, %w : (tensor<8xf32>, tensor<8x16xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @matmul_contraction(%x: tensor<4x8xf32>, %w: tensor<4x16xf32>) {
  // expected-error @+1 {{'tg.matmul' op contraction dimensions differ: 8 (lhs) and 4 (rhs)}}
  %0 = tg.matmul %x, %w : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @matmul_add_addend(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %acc: tensor<16x4xf32>) {
  // expected-error @+1 {{'tg.matmul_add' op addend must have shape [4, 16], found [16, 4]}}
  %0 = tg.matmul_add %x, %w, %acc : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<16x4xf32>
  return
}

// -----

func.func @matmul_add_type(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %acc: tensor<4x16xbf16>) {
  // expected-error @+1 {{'tg.matmul_add' op}}
  %0 = tg.matmul_add %x, %w, %acc : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  return
}

// -----

func.func @matmul_contraction_transposed(%x: tensor<8x4xf32>, %w: tensor<16x8xf32>) {
  // With both transposes lhs is [K, M] = [8, 4] and rhs is [N, K] = [16, 8].
  // expected-error @+1 {{'tg.matmul' op contraction dimensions differ: 4 (lhs) and 8 (rhs)}}
  %0 = tg.matmul %x, %w {transpose_rhs = true}
      : (tensor<8x4xf32>, tensor<16x8xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @matmul_batch(%x: tensor<2x4x8xf32>, %w: tensor<3x8x16xf32>) {
  // expected-error @+1 {{'tg.matmul' op batch dimensions [2] and [3] are not broadcast-compatible}}
  %0 = tg.matmul %x, %w : (tensor<2x4x8xf32>, tensor<3x8x16xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @matmul_result_shape(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.matmul' op result must have shape [4, 16], found [4, 8]}}
  %0 = tg.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_transposed_result_shape(%x: tensor<8x4xf32>, %w: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.matmul' op result must have shape [4, 16], found [8, 16]}}
  %0 = tg.matmul %x, %w {transpose_lhs = true}
      : (tensor<8x4xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @matmul_batch_result_shape(%x: tensor<2x1x4x8xf32>, %w: tensor<5x8x16xf32>) {
  // expected-error @+1 {{'tg.matmul' op result must have shape [2, 5, 4, 16], found [2, 4, 16]}}
  %0 = tg.matmul %x, %w : (tensor<2x1x4x8xf32>, tensor<5x8x16xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @matmul_element_types(%x: tensor<4x8xf32>, %w: tensor<8x16xbf16>) {
  // expected-error @+1 {{'tg.matmul' op element types must match, found 'f32' and 'bf16'}}
  %0 = tg.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xbf16>) -> tensor<4x16xf32>
  return
}

// -----

func.func @matmul_result_element_type(%x: tensor<4x8xf16>, %w: tensor<8x16xf16>) {
  // expected-error @+1 {{'tg.matmul' op element types must match, found 'f16' and 'f32'}}
  %0 = tg.matmul %x, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf32>
  return
}

// -----

func.func @attention_softcap(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'tg.attention' op softcap must be positive and finite, found 0.000000e+00}}
  %0 = tg.attention %q, %q, %q {softcap = 0.0 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @cross_entropy_softcap(%l: tensor<4x8xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{'tg.cross_entropy' op softcap must be positive and finite, found -3.000000e+01}}
  %0 = tg.cross_entropy %l, %t {softcap = -30.0 : f64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @cumsum_axis_out_of_range(%x: tensor<4x8xi64>) {
  // expected-error @+1 {{'tg.cumsum' op axis 2 is out of range for rank 2}}
  %0 = tg.cumsum %x {axis = 2 : i64} : tensor<4x8xi64>
  return
}

// -----

func.func @cumsum_of_a_mask(%x: tensor<4x8xi1>) {
  // expected-error @+1 {{'tg.cumsum' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4x8xi1>'}}
  %0 = tg.cumsum %x {axis = 1 : i64} : tensor<4x8xi1>
  return
}

// -----

func.func @gather_index_does_not_broadcast(%x: tensor<4x8xf32>, %i: tensor<3x2xi64>) {
  // expected-error @+1 {{'tg.gather' op the index shape [3, 2] does not broadcast to the gathered shape [4, 2]}}
  %0 = tg.gather %x, %i {axis = 1 : i64} : (tensor<4x8xf32>, tensor<3x2xi64>) -> tensor<4x2xf32>
  return
}

// -----

func.func @gather_other_rows(%x: tensor<4x8xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'tg.gather' op the gathered shape [3, 2] differs from the operand [4, 8] outside axis 1}}
  %0 = tg.gather %x, %i {axis = 1 : i64} : (tensor<4x8xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  return
}

// -----

func.func @gather_axis(%x: tensor<4x8xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'tg.gather' op axis -3 is out of range for rank 2}}
  %0 = tg.gather %x, %i {axis = -3 : i64} : (tensor<4x8xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return
}

// -----

func.func @gather_grad_type(%g: tensor<4x2xbf16>, %i: tensor<2xi64>) {
  // expected-error @+1 {{'tg.gather_grad' op element types must match, found 'bf16' and 'f32'}}
  %0 = tg.gather_grad %g, %i {axis = 1 : i64} : (tensor<4x2xbf16>, tensor<2xi64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @top_k_too_many(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.top_k' op k = 9 is not in [1, 8]}}
  %0 = tg.top_k %x {k = 9 : i64} : (tensor<4x8xf32>) -> tensor<4x9xi64>
  return
}

// -----

func.func @top_k_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.top_k' op the result shape [4, 3] is not [4, 2]}}
  %0 = tg.top_k %x {k = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x3xi64>
  return
}

// -----

func.func @moe_route_rows(%c: tensor<4x2xi64>) {
  // expected-error @+1 {{'tg.moe_route' op the rows shape [8] is not [8, 1]}}
  %r:3 = tg.moe_route %c : (tensor<4x2xi64>) -> (tensor<8xi64>, tensor<4x2xi64>, tensor<5xi64>)
  return
}

// -----

func.func @moe_route_no_expert(%c: tensor<4x2xi64>) {
  // expected-error @+1 {{'tg.moe_route' op the offsets must be [experts + 1] with at least one expert, found [1]}}
  %r:3 = tg.moe_route %c : (tensor<4x2xi64>) -> (tensor<8x1xi64>, tensor<4x2xi64>, tensor<1xi64>)
  return
}

// -----

func.func @expert_linear_offsets(%x: tensor<8x4xf32>, %o: tensor<4xi64>, %w: tensor<4x6xf32>) {
  // expected-error @+1 {{'tg.expert_linear' op the offsets [4] must be [3], one more than the 2 expert weights}}
  %0 = tg.expert_linear %x, %o, %w, %w : (tensor<8x4xf32>, tensor<4xi64>, tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  return
}

// -----

func.func @expert_linear_weight(%x: tensor<8x4xf32>, %o: tensor<3xi64>, %w: tensor<4x6xf32>) {
  // expected-error @+1 {{'tg.expert_linear' op an expert weight is [4, 6], not [6, 4]}}
  %0 = tg.expert_linear %x, %o, %w, %w {transpose_weight = true} : (tensor<8x4xf32>, tensor<3xi64>, tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  return
}

// -----

func.func @expert_linear_type(%x: tensor<8x4xf32>, %o: tensor<2xi64>, %w: tensor<4x6xbf16>) {
  // expected-error @+1 {{'tg.expert_linear' op element types must match, found 'f32' and 'bf16'}}
  %0 = tg.expert_linear %x, %o, %w : (tensor<8x4xf32>, tensor<2xi64>, tensor<4x6xbf16>) -> tensor<8x6xf32>
  return
}

// -----

func.func @expert_weight_grad_shape(%g: tensor<8x6xf32>, %x: tensor<8x4xf32>, %o: tensor<3xi64>) {
  // expected-error @+1 {{'tg.expert_linear_weight_grad' op an expert result is [4, 6], not [6, 4]}}
  %0:2 = tg.expert_linear_weight_grad %g, %x, %o : (tensor<8x6xf32>, tensor<8x4xf32>, tensor<3xi64>) -> (tensor<6x4xf32>, tensor<4x6xf32>)
  return
}

//===----------------------------------------------------------------------===//
// softmax, layer_norm, embedding
//===----------------------------------------------------------------------===//

// -----

func.func @softmax_axis_too_large(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.softmax' op axis 2 is out of range for rank 2}}
  %0 = tg.softmax %x {axis = 2 : i64} : tensor<4x8xf32>
  return
}

// -----

func.func @softmax_axis_too_negative(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.softmax' op axis -3 is out of range for rank 2}}
  %0 = tg.softmax %x {axis = -3 : i64} : tensor<4x8xf32>
  return
}

// -----

func.func @softmax_rank0(%x: tensor<f32>) {
  // expected-error @+1 {{'tg.softmax' op axis 0 is out of range for rank 0}}
  %0 = tg.softmax %x {axis = 0 : i64} : tensor<f32>
  return
}

// -----

func.func @layer_norm_element_types(%x: tensor<4x8xf32>, %w: tensor<8xbf16>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op element types must match, found 'f32' and 'bf16'}}
  %0 = tg.layer_norm %x, %w, %b
      : (tensor<4x8xf32>, tensor<8xbf16>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_weight_shape(%x: tensor<4x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'tg.rms_norm' op weight must have shape [8], found [4]}}
  %0 = tg.rms_norm %x, %w : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @embedding_padding_idx(%t: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'tg.embedding' op padding_idx must be a row of the table, in [0, 10), found 10}}
  %0 = tg.embedding %t, %i {padding_idx = 10 : i64} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @rope_odd_head(%x: tensor<2x4x7xf32>, %f: tensor<3xf32>) {
  // expected-error @+1 {{'tg.rope' op the head dimension must be even, found 7}}
  %0 = tg.rope %x, %f : (tensor<2x4x7xf32>, tensor<3xf32>) -> tensor<2x4x7xf32>
  return
}

// -----

func.func @rope_frequencies(%x: tensor<2x4x8xbf16>, %f: tensor<4xbf16>) {
  // expected-error @+1 {{'tg.rope' op inv_freq must be tensor<4xf32> (D/2 frequencies), found 'tensor<4xbf16>'}}
  %0 = tg.rope %x, %f : (tensor<2x4x8xbf16>, tensor<4xbf16>) -> tensor<2x4x8xbf16>
  return
}

// -----

func.func @layer_norm_rank0(%x: tensor<f32>, %w: tensor<1xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op input must have rank >= 1}}
  %0 = tg.layer_norm %x, %w, %w
      : (tensor<f32>, tensor<1xf32>, tensor<1xf32>) -> tensor<f32>
  return
}

// -----

func.func @layer_norm_weight_shape(%x: tensor<4x8xf32>, %w: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op weight and bias must have shape [8], found [4]}}
  %0 = tg.layer_norm %x, %w, %b
      : (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<1x8xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op weight and bias must have shape [8], found [1, 8]}}
  %0 = tg.layer_norm %x, %w, %b
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_negative_epsilon(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op epsilon must be non-negative and finite, found -1.000000e-05}}
  %0 = tg.layer_norm %x, %w, %w {epsilon = -1.0e-5}
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_nan_epsilon(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op epsilon must be non-negative and finite, found nan}}
  %0 = tg.layer_norm %x, %w, %w {epsilon = 0x7FF8000000000000 : f64}
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_result_type(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op result must have type 'tensor<4x8xf32>' (or its shape in f16 or bf16 when that is f32), found 'tensor<8xf32>'}}
  %0 = tg.layer_norm %x, %w, %w
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// A norm may round its f32 result to 16 bits as it stores it, not widen.
func.func @layer_norm_result_element_type(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{'tg.layer_norm' op result must have type 'tensor<4x8xbf16>' (or its shape in f16 or bf16 when that is f32), found 'tensor<4x8xf32>'}}
  %0 = tg.layer_norm %x, %w, %w
      : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_grad_grad_element_type(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>, %g: tensor<4x8xf16>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op grad must have type 'tensor<4x8xbf16>' (or its shape in f16 or bf16 when that is f32), found 'tensor<4x8xf16>'}}
  %0:3 = tg.layer_norm_grad %x, %w, %g
      : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<4x8xf16>) -> (tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>)
  return
}

// -----

func.func @embedding_table_rank(%t: tensor<10x4x2xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'tg.embedding' op table must have rank 2, found rank 3}}
  %0 = tg.embedding %t, %i : (tensor<10x4x2xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return
}

// -----

func.func @embedding_element_types(%t: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{'tg.embedding' op result must have the table's element type (or f32 from a 16-bit table), found 'f16' from 'f32'}}
  %0 = tg.embedding %t, %i : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf16>
  return
}

// -----

func.func @embedding_result_shape(%t: tensor<10x4xf32>, %i: tensor<2x3xi32>) {
  // expected-error @+1 {{'tg.embedding' op result must have shape [2, 3, 4], found [6, 4]}}
  %0 = tg.embedding %t, %i : (tensor<10x4xf32>, tensor<2x3xi32>) -> tensor<6x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

// -----

func.func @attention_packed_not_bshd(%x: tensor<2x8x6x16xbf16>) {
  // expected-error @+1 {{'tg.attention' op packed query, key and value need bshd}}
  %0 = tg.attention %x, %x, %x {packed = true}
      : (tensor<2x8x6x16xbf16>, tensor<2x8x6x16xbf16>, tensor<2x8x6x16xbf16>) -> tensor<2x8x2x16xbf16>
  return
}

// -----

func.func @attention_packed_two_values(%x: tensor<2x8x6x16xbf16>, %y: tensor<2x8x6x16xbf16>) {
  // expected-error @+1 {{'tg.attention' op packed query, key and value must be one value}}
  %0 = tg.attention %x, %y, %x {bshd = true, packed = true}
      : (tensor<2x8x6x16xbf16>, tensor<2x8x6x16xbf16>, tensor<2x8x6x16xbf16>) -> tensor<2x8x2x16xbf16>
  return
}

// -----

func.func @attention_packed_heads(%x: tensor<2x8x5x16xbf16>) {
  // expected-error @+1 {{'tg.attention' op packed heads must be [B, T, Hq + 2 Hkv, D] with Hq the result's heads, found 'tensor<2x8x5x16xbf16>'}}
  %0 = tg.attention %x, %x, %x {bshd = true, packed = true}
      : (tensor<2x8x5x16xbf16>, tensor<2x8x5x16xbf16>, tensor<2x8x5x16xbf16>) -> tensor<2x8x2x16xbf16>
  return
}

// -----

func.func @attention_grad_packed_mask(%x: tensor<2x8x6x16xbf16>, %o: tensor<2x8x2x16xbf16>) {
  // expected-error @+1 {{'tg.attention_grad' op with packed operands computes query_grad only (output_mask [true, false, false])}}
  %0:3 = tg.attention_grad %x, %x, %x, %o, %o {bshd = true, packed = true}
      : (tensor<2x8x6x16xbf16>, tensor<2x8x6x16xbf16>, tensor<2x8x6x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>)
      -> (tensor<2x8x6x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>)
  return
}

// -----

func.func @attention_rank1(%q: tensor<16xf32>, %k: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.attention' op query, key and value must have the same rank >= 2, found ranks 1, 2 and 2}}
  %0 = tg.attention %q, %k, %k
      : (tensor<16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @attention_rank_mismatch(%q: tensor<2x8x16xf32>, %k: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.attention' op query, key and value must have the same rank >= 2, found ranks 3, 2 and 2}}
  %0 = tg.attention %q, %k, %k
      : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @attention_mask_length(%q: tensor<2x4x8x16xf32>, %m: tensor<2x7xi64>) {
  // expected-error @+1 {{'tg.attention' op key_mask must be [P..., 8] with P... a prefix of the batch dimensions [2, 4], found [2, 7]}}
  %0 = tg.attention %q, %q, %q mask %m
      : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x7xi64>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_mask_not_prefix(%q: tensor<2x4x8x16xf32>, %m: tensor<4x8xi64>) {
  // expected-error @+1 {{'tg.attention' op key_mask must be [P..., 8] with P... a prefix of the batch dimensions [2, 4], found [4, 8]}}
  %0 = tg.attention %q, %q, %q mask %m
      : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<4x8xi64>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_mask_float(%q: tensor<2x8x16xf32>, %m: tensor<2x8xf32>) {
  // expected-error @+1 {{operand #3 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = tg.attention %q, %q, %q mask %m
      : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<2x8x16xf32>, %k: tensor<3x8x16xf32>, %v: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'tg.attention' op query, key and value must have the same batch dimensions (key and value may have fewer heads, the last, dividing the query's), found [2], [3] and [2]}}
  %0 = tg.attention %q, %k, %v
      : (tensor<2x8x16xf32>, tensor<3x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @attention_group(%q: tensor<2x4x8x16xf32>, %kv: tensor<2x3x8x16xf32>) {
  // Grouped-query attention needs key/value heads that divide query heads.
  // expected-error @+1 {{'tg.attention' op query, key and value must have the same batch dimensions (key and value may have fewer heads, the last, dividing the query's), found [2, 4], [2, 3] and [2, 3]}}
  %0 = tg.attention %q, %kv, %kv
      : (tensor<2x4x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_value_batch(%q: tensor<2x4x8x16xf32>, %v: tensor<2x1x8x16xf32>) {
  // Batch dimensions must be equal, they do not broadcast.
  // expected-error @+1 {{'tg.attention' op query, key and value must have the same batch dimensions (key and value may have fewer heads, the last, dividing the query's), found [2, 4], [2, 4] and [2, 1]}}
  %0 = tg.attention %q, %q, %v
      : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x8x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_head_size(%q: tensor<8x16xf32>, %k: tensor<8x32xf32>) {
  // expected-error @+1 {{'tg.attention' op query and key head sizes differ: 16 and 32}}
  %0 = tg.attention %q, %k, %k
      : (tensor<8x16xf32>, tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return
}

// -----

func.func @attention_bshd_rank(%q: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'tg.attention' op bshd attention takes query, key and value of rank 4 ([B, T, H, D]), found ranks 3, 3 and 3}}
  %0 = tg.attention %q, %q, %q {bshd = true}
      : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @attention_bshd_result(%q: tensor<2x8x4x16xf32>) {
  // The result of bshd heads is [B, T, H, D] too.
  // expected-error @+1 {{'tg.attention' op result must have shape [2, 8, 4, 16], found [2, 4, 8, 16]}}
  %0 = tg.attention %q, %q, %q {bshd = true}
      : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  return
}

// -----

func.func @attention_lse_shape(%q: tensor<2x4x8x16xbf16>) {
  // The row log-sum-exp is one f32 per query row.
  // expected-error @+1 {{'tg.attention' op lse must have shape [2, 4, 8], found [2, 4, 16]}}
  %0, %1 = tg.attention %q, %q, %q
      : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) -> (tensor<2x4x8x16xbf16>, tensor<2x4x16xf32>)
  return
}

// -----

func.func @attention_grad_lse_type(%q: tensor<2x4x8x16xbf16>, %l: tensor<2x4x8xbf16>) {
  // expected-error @+1 {{'tg.attention_grad' op lse must be f32, found 'tensor<2x4x8xbf16>'}}
  %0:3 = tg.attention_grad %q, %q, %q, %q, %q lse %l
      : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8xbf16>)
      -> (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>)
  return
}

// -----

func.func @attention_kv_length(%q: tensor<8x16xf32>, %v: tensor<10x16xf32>) {
  // expected-error @+1 {{'tg.attention' op key and value sequence lengths differ: 8 and 10}}
  %0 = tg.attention %q, %q, %v
      : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<10x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @attention_window_without_causal(%q: tensor<6x16xf32>) {
  // expected-error @+1 {{'tg.attention' op window must be 0 (none) or positive with causal, found 4 without causal}}
  %0 = tg.attention %q, %q, %q {window = 4}
      : (tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
  return
}

// -----

func.func @attention_segments_without_ids(%q: tensor<6x16xf32>) {
  // expected-error @+1 {{'tg.attention' op segments needs the segment ids as key_mask}}
  %0 = tg.attention %q, %q, %q {causal = true, segments = true}
      : (tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
  return
}

// -----

func.func @attention_segments_cross(%q: tensor<2x6x16xf32>, %k: tensor<2x8x16xf32>, %ids: tensor<2x8xi64>) {
  // expected-error @+1 {{'tg.attention' op segments needs equal query and key lengths, found 6 and 8}}
  %0 = tg.attention %q, %k, %k mask %ids {segments = true}
      : (tensor<2x6x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<2x6x16xf32>
  return
}

// -----

func.func @rope_positions_shape(%x: tensor<2x3x5x8xf32>, %f: tensor<4xf32>, %p: tensor<2x3xi64>) {
  // expected-error @+1 {{'tg.rope' op positions must be [2, 5] (the input's first dimension and its positions), found 'tensor<2x3xi64>'}}
  %0 = tg.rope %x, %f positions %p : (tensor<2x3x5x8xf32>, tensor<4xf32>, tensor<2x3xi64>) -> tensor<2x3x5x8xf32>
  return
}

// -----

func.func @attention_negative_window(%q: tensor<6x16xf32>) {
  // expected-error @+1 {{'tg.attention' op window must be 0 (none) or positive with causal, found -1}}
  %0 = tg.attention %q, %q, %q {causal = true, window = -1}
      : (tensor<6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
  return
}

// -----

func.func @attention_causal_lengths(%q: tensor<6x16xf32>, %k: tensor<10x16xf32>, %v: tensor<10x8xf32>) {
  // expected-error @+1 {{'tg.attention' op causal attention needs equal query and key lengths, found 6 and 10}}
  %0 = tg.attention %q, %k, %v {causal = true}
      : (tensor<6x16xf32>, tensor<10x16xf32>, tensor<10x8xf32>) -> tensor<6x8xf32>
  return
}

// -----

func.func @attention_zero_scale(%q: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.attention' op scale must be positive and finite, found 0.000000e+00}}
  %0 = tg.attention %q, %q, %q {scale = 0.0}
      : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @attention_negative_scale(%q: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.attention' op scale must be positive and finite, found -1.250000e-01}}
  %0 = tg.attention %q, %q, %q {scale = -0.125}
      : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @attention_infinite_scale(%q: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.attention' op scale must be positive and finite, found INF}}
  %0 = tg.attention %q, %q, %q {scale = 0x7FF0000000000000 : f64}
      : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @attention_result_shape(%q: tensor<8x16xf32>, %k: tensor<8x16xf32>, %v: tensor<8x32xf32>) {
  // expected-error @+1 {{'tg.attention' op result must have shape [8, 32], found [8, 16]}}
  %0 = tg.attention %q, %k, %v
      : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x32xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @attention_element_types(%q: tensor<8x16xf32>, %k: tensor<8x16xbf16>) {
  // expected-error @+1 {{'tg.attention' op element types must match, found 'f32' and 'bf16'}}
  %0 = tg.attention %q, %k, %k
      : (tensor<8x16xf32>, tensor<8x16xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  return
}

// -----

func.func @attention_result_element_type(%q: tensor<8x16xbf16>) {
  // expected-error @+1 {{'tg.attention' op element types must match, found 'bf16' and 'f32'}}
  %0 = tg.attention %q, %q, %q
      : (tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// cross_entropy
//===----------------------------------------------------------------------===//

// -----

func.func @cross_entropy_targets_shape(%l: tensor<8x10xf32>, %t: tensor<10xi64>) {
  // expected-error @+1 {{'tg.cross_entropy' op targets must have shape [8], found [10]}}
  %0 = tg.cross_entropy %l, %t : (tensor<8x10xf32>, tensor<10xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_targets_rank(%l: tensor<2x4x10xf32>, %t: tensor<8xi32>) {
  // expected-error @+1 {{'tg.cross_entropy' op targets must have shape [2, 4], found [8]}}
  %0 = tg.cross_entropy %l, %t : (tensor<2x4x10xf32>, tensor<8xi32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_rank0_logits(%l: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.cross_entropy' op logits must have rank >= 1 (the class axis last)}}
  %0 = tg.cross_entropy %l, %t : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_grad_without_result(%l: tensor<8x10xf32>, %t: tensor<8xi64>, %g: tensor<f32>) {
  // expected-error @+1 {{'tg.cross_entropy' op has grad but no logits_grad result}}
  %0 = tg.cross_entropy %l, %t grad %g : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_logits_grad_type(%l: tensor<8x10xbf16>, %t: tensor<8xi64>, %g: tensor<f32>) {
  // expected-error @+1 {{'tg.cross_entropy' op logits_grad must have type 'tensor<8x10xbf16>', found 'tensor<8x10xf32>'}}
  %0, %1 = tg.cross_entropy %l, %t grad %g : (tensor<8x10xbf16>, tensor<8xi64>, tensor<f32>) -> (tensor<f32>, tensor<8x10xf32>)
  return
}

//===----------------------------------------------------------------------===//
// Shape ops, casts and constants
//===----------------------------------------------------------------------===//

// -----

func.func @reshape_element_count(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'tg.reshape' op element counts differ: 24 (operand) and 20 (result)}}
  %0 = tg.reshape %x : tensor<2x3x4xf32> -> tensor<4x5xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<6xf32>) {
  // expected-error @+1 {{'tg.reshape' op element types must match, found 'f32' and 'i32'}}
  %0 = tg.reshape %x : tensor<6xf32> -> tensor<2x3xi32>
  return
}

// -----

func.func @transpose_short_permutation(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'tg.transpose' op permutation [1, 0] is not a permutation of the operand's 3 dimensions}}
  %0 = tg.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  return
}

// -----

func.func @transpose_duplicate(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'tg.transpose' op permutation [0, 0] is not a permutation of the operand's 2 dimensions}}
  %0 = tg.transpose %x {permutation = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @transpose_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'tg.transpose' op permutation [2, 0] is not a permutation of the operand's 2 dimensions}}
  %0 = tg.transpose %x {permutation = array<i64: 2, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @transpose_negative(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'tg.transpose' op permutation [-1, 0] is not a permutation of the operand's 2 dimensions}}
  %0 = tg.transpose %x {permutation = array<i64: -1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @transpose_result_shape(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'tg.transpose' op result must have shape [3, 2], found [2, 3]}}
  %0 = tg.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @transpose_element_type(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'tg.transpose' op element types must match, found 'f32' and 'f16'}}
  %0 = tg.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf16>
  return
}

// -----

func.func @slice_offsets_rank(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.slice' op offsets, slice and full shape must have the same rank, found 1, 2 and 2}}
  %0 = tg.slice %x {offsets = array<i64: 4>} : tensor<8x16xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @slice_result_rank(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.slice' op offsets, slice and full shape must have the same rank, found 2, 1 and 2}}
  %0 = tg.slice %x {offsets = array<i64: 4, 0>} : tensor<8x16xf32> -> tensor<16xf32>
  return
}

// -----

func.func @slice_does_not_fit(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.slice' op slice of size [4, 16] at offsets [6, 0] does not fit in shape [8, 16]}}
  %0 = tg.slice %x {offsets = array<i64: 6, 0>} : tensor<8x16xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @slice_negative_offset(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.slice' op slice of size [4, 4] at offsets [0, -1] does not fit in shape [8, 16]}}
  %0 = tg.slice %x {offsets = array<i64: 0, -1>} : tensor<8x16xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @slice_element_type(%x: tensor<8xi64>) {
  // expected-error @+1 {{'tg.slice' op element types must match, found 'i64' and 'i32'}}
  %0 = tg.slice %x {offsets = array<i64: 0>} : tensor<8xi64> -> tensor<4xi32>
  return
}

// -----

func.func @split_no_pieces(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.split' op needs at least one piece}}
  "tg.split"(%x) <{axis = 0 : i64}> : (tensor<4xf32>) -> ()
  return
}

// -----

func.func @split_piece_shape(%x: tensor<4x12xf32>) {
  // expected-error @+1 {{'tg.split' op piece shape [3, 8] does not match [4, 12] outside axis 1}}
  %0:2 = tg.split %x {axis = 1 : i64} : tensor<4x12xf32> -> tensor<4x4xf32>, tensor<3x8xf32>
  return
}

// -----

func.func @split_piece_rank(%x: tensor<4x12xf32>) {
  // expected-error @+1 {{'tg.split' op piece shape [48] does not match [4, 12] outside axis 0}}
  %0 = tg.split %x {axis = 0 : i64} : tensor<4x12xf32> -> tensor<48xf32>
  return
}

// -----

func.func @split_sizes(%x: tensor<4x12xf32>) {
  // expected-error @+1 {{'tg.split' op pieces add up to 8 along axis 1, expected 12}}
  %0:2 = tg.split %x {axis = -1 : i64} : tensor<4x12xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  return
}

// -----

func.func @split_axis(%x: tensor<4x12xf32>) {
  // expected-error @+1 {{'tg.split' op axis 2 is out of range for rank 2}}
  %0:2 = tg.split %x {axis = 2 : i64} : tensor<4x12xf32> -> tensor<4x6xf32>, tensor<4x6xf32>
  return
}

// -----

func.func @split_element_types(%x: tensor<4x12xf32>) {
  // expected-error @+1 {{'tg.split' op element types must match, found 'f16' and 'f32'}}
  %0:2 = tg.split %x {axis = 1 : i64} : tensor<4x12xf32> -> tensor<4x6xf16>, tensor<4x6xf16>
  return
}

// -----

func.func @concat_no_pieces() {
  // expected-error @+1 {{'tg.concat' op needs at least one piece}}
  %0 = "tg.concat"() <{axis = 0 : i64}> : () -> tensor<4xf32>
  return
}

// -----

func.func @concat_piece_shape(%x: tensor<4x4xf32>, %y: tensor<3x4xf32>) {
  // expected-error @+1 {{'tg.concat' op piece shape [3, 4] does not match [4, 8] outside axis 1}}
  %0 = tg.concat %x, %y {axis = 1 : i64} : (tensor<4x4xf32>, tensor<3x4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @concat_sizes(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) {
  // expected-error @+1 {{'tg.concat' op pieces add up to 8 along axis 0, expected 12}}
  %0 = tg.concat %x, %y {axis = 0 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<12x4xf32>
  return
}

// -----

func.func @concat_axis(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{'tg.concat' op axis -3 is out of range for rank 2}}
  %0 = tg.concat %x, %x {axis = -3 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @concat_element_types(%x: tensor<4xi64>, %y: tensor<4xi32>) {
  // expected-error @+1 {{'tg.concat' op element types must match, found 'i64' and 'i32'}}
  %0 = tg.concat %x, %y {axis = 0 : i64} : (tensor<4xi64>, tensor<4xi32>) -> tensor<8xi64>
  return
}

// -----

func.func @reduce_axis_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.reduce_sum' op reduction axis 2 is out of range for rank 2}}
  %0 = tg.reduce_sum %x {axes = array<i64: 2>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @reduce_negative_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.reduce_mean' op reduction axis -1 is out of range for rank 2}}
  %0 = tg.reduce_mean %x {axes = array<i64: -1>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_unsorted_axes(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'tg.reduce_max' op reduction axes must be sorted and distinct, found [2, 0]}}
  %0 = tg.reduce_max %x {axes = array<i64: 2, 0>} : tensor<2x3x4xf32> -> tensor<3xf32>
  return
}

// -----

func.func @reduce_duplicate_axes(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'tg.reduce_sum' op reduction axes must be sorted and distinct, found [1, 1]}}
  %0 = tg.reduce_sum %x {axes = array<i64: 1, 1>} : tensor<2x3x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @reduce_keep_dims_result_shape(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'tg.reduce_mean' op result must have shape [2, 1, 4], found [2, 4]}}
  %0 = tg.reduce_mean %x {axes = array<i64: 1>, keep_dims = true} : tensor<2x3x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @reduce_result_shape(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'tg.reduce_max' op result must have shape [2, 4], found [2, 1, 4]}}
  %0 = tg.reduce_max %x {axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  return
}

// -----

func.func @reduce_element_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.reduce_sum' op element types must match, found 'f32' and 'f16'}}
  %0 = tg.reduce_sum %x {axes = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf16>
  return
}

// -----

func.func @broadcast_to_incompatible(%x: tensor<3xf32>) {
  // expected-error @+1 {{'tg.broadcast_to' op shape [3] does not broadcast to [4, 8]}}
  %0 = tg.broadcast_to %x : tensor<3xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @broadcast_to_smaller(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.broadcast_to' op shape [4, 8] does not broadcast to [8]}}
  %0 = tg.broadcast_to %x : tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @broadcast_to_element_type(%x: tensor<8xi1>) {
  // expected-error @+1 {{'tg.broadcast_to' op element types must match, found 'i1' and 'f32'}}
  %0 = tg.broadcast_to %x : tensor<8xi1> -> tensor<4x8xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.cast' op result must have shape [4, 8], found [8, 4]}}
  %0 = tg.cast %x : tensor<4x8xf32> -> tensor<8x4xbf16>
  return
}

// -----

func.func @constant_type_mismatch() {
  // expected-error @+1 {{'tg.constant' op result must have type 'tensor<2xf32>', found 'tensor<3xf32>'}}
  %0 = "tg.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  return
}

// -----

func.func @constant_element_type_mismatch() {
  // expected-error @+1 {{'tg.constant' op result must have type 'tensor<2xi64>', found 'tensor<2xi32>'}}
  %0 = "tg.constant"() <{value = dense<[1, 2]> : tensor<2xi64>}> : () -> tensor<2xi32>
  return
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

// -----

func.func @sum_to_incompatible(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.sum_to' op shape [3] does not broadcast to [4, 8]}}
  %0 = tg.sum_to %x : tensor<4x8xf32> -> tensor<3xf32>
  return
}

// -----

func.func @sum_to_larger(%x: tensor<8xf32>) {
  // expected-error @+1 {{'tg.sum_to' op shape [4, 8] does not broadcast to [8]}}
  %0 = tg.sum_to %x : tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @sum_to_element_type(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{'tg.sum_to' op element types must match, found 'f32' and 'f16'}}
  %0 = tg.sum_to %x : tensor<4x8xf16> -> tensor<8xf32>
  return
}

// -----

func.func @softmax_grad_axis(%y: tensor<4x8xf32>, %g: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.softmax_grad' op axis 2 is out of range for rank 2}}
  %0 = tg.softmax_grad %y, %g {axis = 2 : i64} : tensor<4x8xf32>
  return
}

// -----

func.func @layer_norm_grad_element_types(%x: tensor<4x8xf32>, %w: tensor<8xf16>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op element types must match, found 'f32' and 'f16'}}
  %0:3 = tg.layer_norm_grad %x, %w, %x
      : (tensor<4x8xf32>, tensor<8xf16>, tensor<4x8xf32>)
      -> (tensor<4x8xf32>, tensor<8xf16>, tensor<8xf16>)
  return
}

// -----

func.func @layer_norm_grad_rank0(%x: tensor<f32>, %w: tensor<1xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op input must have rank >= 1}}
  %0:3 = tg.layer_norm_grad %x, %w, %x
      : (tensor<f32>, tensor<1xf32>, tensor<f32>) -> (tensor<f32>, tensor<1xf32>, tensor<1xf32>)
  return
}

// -----

func.func @layer_norm_grad_weight_shape(%x: tensor<4x8xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op weight must have shape [8], found [4]}}
  %0:3 = tg.layer_norm_grad %x, %w, %x
      : (tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>)
      -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @layer_norm_grad_negative_epsilon(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op epsilon must be non-negative and finite, found -1.000000e+00}}
  %0:3 = tg.layer_norm_grad %x, %w, %x {epsilon = -1.0}
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>)
      -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_grad_type(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %g: tensor<1x8xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op grad must have type 'tensor<4x8xf32>' (or its shape in f16 or bf16 when that is f32), found 'tensor<1x8xf32>'}}
  %0:3 = tg.layer_norm_grad %x, %w, %g
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<1x8xf32>)
      -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_input_grad_type(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op input_grad must have type 'tensor<4x8xbf16>', found 'tensor<4x8xf32>'}}
  %0:3 = tg.layer_norm_grad %x, %w, %x
      : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<4x8xbf16>)
      -> (tensor<4x8xf32>, tensor<8xbf16>, tensor<8xbf16>)
  return
}

// -----

func.func @layer_norm_grad_weight_grad_type(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op weight_grad must have type 'tensor<8xf32>', found 'tensor<4x8xf32>'}}
  %0:3 = tg.layer_norm_grad %x, %w, %x
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>)
      -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_bias_grad_type(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op bias_grad must have type 'tensor<8xf32>', found 'tensor<1xf32>'}}
  %0:3 = tg.layer_norm_grad %x, %w, %x
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>)
      -> (tensor<4x8xf32>, tensor<8xf32>, tensor<1xf32>)
  return
}

// -----

func.func @embedding_grad_addend_shape(%i: tensor<3xi64>, %g: tensor<3x4xf32>, %acc: tensor<9x4xf32>) {
  // expected-error @+1 {{'tg.embedding_grad' op addend must have type 'tensor<10x4xf32>' (or its shape in f16 or bf16 when that is f32), found 'tensor<9x4xf32>'}}
  %0 = tg.embedding_grad %i, %g addend %acc : (tensor<3xi64>, tensor<3x4xf32>, tensor<9x4xf32>) -> tensor<10x4xf32>
  return
}

// -----

func.func @embedding_grad_result_rank(%i: tensor<3xi64>, %g: tensor<3x4xf32>) {
  // expected-error @+1 {{'tg.embedding_grad' op result (the table gradient) must have rank 2, found rank 1}}
  %0 = tg.embedding_grad %i, %g : (tensor<3xi64>, tensor<3x4xf32>) -> tensor<40xf32>
  return
}

// -----

func.func @embedding_grad_element_types(%i: tensor<3xi64>, %g: tensor<3x4xbf16>) {
  // expected-error @+1 {{'tg.embedding_grad' op element types must match, found 'bf16' and 'f32'}}
  %0 = tg.embedding_grad %i, %g : (tensor<3xi64>, tensor<3x4xbf16>) -> tensor<10x4xf32>
  return
}

// -----

func.func @embedding_grad_grad_shape(%i: tensor<2x8xi32>, %g: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'tg.embedding_grad' op grad must have shape [2, 8, 8], found [2, 8, 16]}}
  %0 = tg.embedding_grad %i, %g : (tensor<2x8xi32>, tensor<2x8x16xf32>) -> tensor<100x8xf32>
  return
}

// -----

func.func @attention_grad_operands(%q: tensor<6x16xf32>, %k: tensor<10x16xf32>, %v: tensor<10x8xf32>, %o: tensor<6x8xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op causal attention needs equal query and key lengths, found 6 and 10}}
  %0:3 = tg.attention_grad %q, %k, %v, %o, %o {causal = true}
      : (tensor<6x16xf32>, tensor<10x16xf32>, tensor<10x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>)
      -> (tensor<6x16xf32>, tensor<10x16xf32>, tensor<10x8xf32>)
  return
}

// -----

func.func @attention_grad_scale(%q: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op scale must be positive and finite, found -1.000000e+00}}
  %0:3 = tg.attention_grad %q, %q, %q, %q, %q {scale = -1.0}
      : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
      -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

func.func @attention_grad_output_shape(%q: tensor<8x16xf32>, %v: tensor<8x32xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op output must have shape [8, 32], found [8, 16]}}
  %0:3 = tg.attention_grad %q, %q, %v, %q, %q
      : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
      -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x32xf32>)
  return
}

// -----

func.func @attention_grad_grad_type(%q: tensor<8x16xf32>, %v: tensor<8x32xf32>, %o: tensor<8x32xf32>, %g: tensor<1x32xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op grad must have type 'tensor<8x32xf32>', found 'tensor<1x32xf32>'}}
  %0:3 = tg.attention_grad %q, %q, %v, %o, %g
      : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<1x32xf32>)
      -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x32xf32>)
  return
}

// -----

func.func @attention_grad_element_types(%q: tensor<8x16xf32>, %g: tensor<8x16xf16>) {
  // expected-error @+1 {{'tg.attention_grad' op element types must match, found 'f32' and 'f16'}}
  %0:3 = tg.attention_grad %q, %q, %q, %q, %g
      : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf16>)
      -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
  return
}

// -----

func.func @attention_grad_query_grad_type(%q: tensor<6x16xf32>, %k: tensor<10x16xf32>, %v: tensor<10x8xf32>, %o: tensor<6x8xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op query_grad must have type 'tensor<6x16xf32>', found 'tensor<10x16xf32>'}}
  %0:3 = tg.attention_grad %q, %k, %v, %o, %o
      : (tensor<6x16xf32>, tensor<10x16xf32>, tensor<10x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>)
      -> (tensor<10x16xf32>, tensor<10x16xf32>, tensor<10x8xf32>)
  return
}

// -----

func.func @attention_grad_key_grad_type(%q: tensor<6x16xf32>, %k: tensor<10x16xf32>, %v: tensor<10x8xf32>, %o: tensor<6x8xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op key_grad must have type 'tensor<10x16xf32>', found 'tensor<6x16xf32>'}}
  %0:3 = tg.attention_grad %q, %k, %v, %o, %o
      : (tensor<6x16xf32>, tensor<10x16xf32>, tensor<10x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>)
      -> (tensor<6x16xf32>, tensor<6x16xf32>, tensor<10x8xf32>)
  return
}

// -----

func.func @attention_grad_value_grad_type(%q: tensor<6x16xf32>, %k: tensor<10x16xf32>, %v: tensor<10x8xf32>, %o: tensor<6x8xf32>) {
  // expected-error @+1 {{'tg.attention_grad' op value_grad must have type 'tensor<10x8xf32>', found 'tensor<6x8xf32>'}}
  %0:3 = tg.attention_grad %q, %k, %v, %o, %o
      : (tensor<6x16xf32>, tensor<10x16xf32>, tensor<10x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>)
      -> (tensor<6x16xf32>, tensor<10x16xf32>, tensor<6x8xf32>)
  return
}

// -----

func.func @cross_entropy_grad_targets(%l: tensor<8x10xf32>, %t: tensor<8x1xi64>, %g: tensor<f32>) {
  // expected-error @+1 {{'tg.cross_entropy_grad' op targets must have shape [8], found [8, 1]}}
  %0 = tg.cross_entropy_grad %l, %t, %g
      : (tensor<8x10xf32>, tensor<8x1xi64>, tensor<f32>) -> tensor<8x10xf32>
  return
}

// -----

func.func @cross_entropy_grad_rank0_logits(%l: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.cross_entropy_grad' op logits must have rank >= 1 (the class axis last)}}
  %0 = tg.cross_entropy_grad %l, %t, %l : (tensor<f32>, tensor<i64>, tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_grad_result_type(%l: tensor<8x10xf32>, %t: tensor<8xi64>, %g: tensor<f32>) {
  // expected-error @+1 {{'tg.cross_entropy_grad' op result must have type 'tensor<8x10xf32>', found 'tensor<8x10xf16>'}}
  %0 = tg.cross_entropy_grad %l, %t, %g
      : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xf16>
  return
}

// -----

func.func @cross_entropy_grad_non_scalar_grad(%l: tensor<8x10xf32>, %t: tensor<8xi64>, %g: tensor<1xf32>) {
  // expected-error @+1 {{'tg.cross_entropy_grad' op operand #2 must be 0D tensor of 32-bit float or 16-bit float or bfloat16 type values, but got 'tensor<1xf32>'}}
  %0 = tg.cross_entropy_grad %l, %t, %g
      : (tensor<8x10xf32>, tensor<8xi64>, tensor<1xf32>) -> tensor<8x10xf32>
  return
}

// -----

func.func @reduce_max_grad_axes(%x: tensor<2x3xf32>, %o: tensor<2xf32>) {
  // expected-error @+1 {{'tg.reduce_max_grad' op reduction axis 2 is out of range for rank 2}}
  %0 = tg.reduce_max_grad %x, %o, %o {axes = array<i64: 2>}
      : (tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @reduce_max_grad_output_shape(%x: tensor<2x3xf32>, %o: tensor<3xf32>) {
  // expected-error @+1 {{'tg.reduce_max_grad' op output must have shape [2], found [3]}}
  %0 = tg.reduce_max_grad %x, %o, %o {axes = array<i64: 1>}
      : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @reduce_max_grad_element_types(%x: tensor<2x3xf32>, %o: tensor<2xbf16>) {
  // expected-error @+1 {{'tg.reduce_max_grad' op element types must match, found 'f32' and 'bf16'}}
  %0 = tg.reduce_max_grad %x, %o, %o {axes = array<i64: 1>}
      : (tensor<2x3xf32>, tensor<2xbf16>, tensor<2xbf16>) -> tensor<2x3xf32>
  return
}

// -----

func.func @reduce_max_grad_grad_type(%x: tensor<2x3xf32>, %o: tensor<2x1xf32>, %g: tensor<2xf32>) {
  // expected-error @+1 {{'tg.reduce_max_grad' op grad must have type 'tensor<2x1xf32>', found 'tensor<2xf32>'}}
  %0 = tg.reduce_max_grad %x, %o, %g {axes = array<i64: 1>, keep_dims = true}
      : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @reduce_max_grad_result_type(%x: tensor<2x3xf32>, %o: tensor<2xf32>) {
  // expected-error @+1 {{'tg.reduce_max_grad' op result must have type 'tensor<2x3xf32>', found 'tensor<3x2xf32>'}}
  %0 = tg.reduce_max_grad %x, %o, %o {axes = array<i64: 1>}
      : (tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @slice_grad_does_not_fit(%g: tensor<4x4xf32>) {
  // expected-error @+1 {{'tg.slice_grad' op slice of size [4, 4] at offsets [0, 13] does not fit in shape [8, 16]}}
  %0 = tg.slice_grad %g {offsets = array<i64: 0, 13>} : tensor<4x4xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @slice_grad_rank(%g: tensor<4xf32>) {
  // expected-error @+1 {{'tg.slice_grad' op offsets, slice and full shape must have the same rank, found 2, 1 and 2}}
  %0 = tg.slice_grad %g {offsets = array<i64: 0, 0>} : tensor<4xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @slice_grad_element_types(%g: tensor<4xf16>) {
  // expected-error @+1 {{'tg.slice_grad' op element types must match, found 'f16' and 'f32'}}
  %0 = tg.slice_grad %g {offsets = array<i64: 0>} : tensor<4xf16> -> tensor<8xf32>
  return
}

//===----------------------------------------------------------------------===//
// sgd_update
//===----------------------------------------------------------------------===//

// -----

func.func @sgd_negative_momentum(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op momentum must be in [0.000000e+00, INF), found -5.000000e-01}}
  %0:2 = tg.sgd_update %p, %p, %lr, %s, %p {momentum = -0.5}
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32>)
      -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @sgd_dampening_above_one(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op dampening must be in [0.000000e+00, 1.000000e+00], found 1.500000e+00}}
  %0:2 = tg.sgd_update %p, %p, %lr, %s, %p {momentum = 0.9, dampening = 1.5}
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32>)
      -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @sgd_negative_dampening(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op dampening must be in [0.000000e+00, 1.000000e+00], found -1.000000e-01}}
  %0:2 = tg.sgd_update %p, %p, %lr, %s, %p {momentum = 0.9, dampening = -0.1}
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32>)
      -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @sgd_negative_weight_decay(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op weight_decay must be in [0.000000e+00, INF), found -1.000000e-02}}
  %0 = tg.sgd_update %p, %p, %lr, %s {weight_decay = -0.01}
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

func.func @sgd_nan_weight_decay(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op weight_decay must be in [0.000000e+00, INF), found nan}}
  %0 = tg.sgd_update %p, %p, %lr, %s {weight_decay = 0x7FF8000000000000 : f64}
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

func.func @sgd_nesterov_without_momentum(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op nesterov momentum needs momentum > 0 and dampening 0, found momentum 0.000000e+00 and dampening 0.000000e+00}}
  %0 = tg.sgd_update %p, %p, %lr, %s {nesterov = true}
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

func.func @sgd_nesterov_with_dampening(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op nesterov momentum needs momentum > 0 and dampening 0, found momentum 9.000000e-01 and dampening 1.000000e-01}}
  %0:2 = tg.sgd_update %p, %p, %lr, %s, %p {momentum = 0.9, dampening = 0.1, nesterov = true}
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32>)
      -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @sgd_buffer_without_momentum(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op has a momentum buffer but momentum is 0}}
  %0:2 = tg.sgd_update %p, %p, %lr, %s, %p
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32>)
      -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @sgd_momentum_without_buffer(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op needs a momentum buffer when momentum is non-zero}}
  %0 = tg.sgd_update %p, %p, %lr, %s {momentum = 0.9}
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

func.func @sgd_buffer_not_returned(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op must return an updated momentum buffer exactly when it takes one}}
  %0 = tg.sgd_update %p, %p, %lr, %s, %p {momentum = 0.9}
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @sgd_buffer_returned_not_taken(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op must return an updated momentum buffer exactly when it takes one}}
  %0:2 = "tg.sgd_update"(%p, %p, %lr, %s) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>}>
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @sgd_grad_shape(%p: tensor<4xf32>, %g: tensor<8xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op grad must have shape [4], found [8]}}
  %0 = tg.sgd_update %p, %g, %lr, %s
      : (tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

func.func @sgd_new_param_type(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op new_param must have type 'tensor<4xf32>', found 'tensor<4xbf16>'}}
  %0 = tg.sgd_update %p, %p, %lr, %s
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> tensor<4xbf16>
  return
}

// -----

func.func @sgd_buffer_shape(%p: tensor<4xf32>, %b: tensor<2x2xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op momentum_buffer must have shape [4], found [2, 2]}}
  %0:2 = tg.sgd_update %p, %p, %lr, %s, %b {momentum = 0.9}
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<2x2xf32>)
      -> (tensor<4xf32>, tensor<2x2xf32>)
  return
}

// -----

func.func @sgd_new_buffer_type(%p: tensor<4xf32>, %b: tensor<4xbf16>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_update' op new_momentum_buffer must have type 'tensor<4xbf16>', found 'tensor<4xf32>'}}
  %0:2 = tg.sgd_update %p, %p, %lr, %s, %b {momentum = 0.9}
      : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<4xbf16>)
      -> (tensor<4xf32>, tensor<4xf32>)
  return
}

//===----------------------------------------------------------------------===//
// adamw_update
//===----------------------------------------------------------------------===//

// -----

func.func @adamw_beta1(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_update' op beta1 must be in [0.000000e+00, 1.000000e+00), found 1.000000e+00}}
  %0:3 = tg.adamw_update %p, %p, %p, %p, %lr, %s {beta1 = 1.0}
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_beta2(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_update' op beta2 must be in [0.000000e+00, 1.000000e+00), found -1.000000e-01}}
  %0:3 = tg.adamw_update %p, %p, %p, %p, %lr, %s {beta2 = -0.1}
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @multi_adamw_counts(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.multi_adamw_update' op needs as many grads, exp_avgs and exp_avg_sqs as params (2), found 1, 2 and 2}}
  %0:6 = tg.multi_adamw_update (%p, %p), (%p), (%p, %p), (%p, %p), %lr, %s
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @multi_adamw_results(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.multi_adamw_update' op has 2 results; 3 x 1 params expected}}
  %0:2 = tg.multi_adamw_update (%p), (%p), (%p), (%p), %lr, %s
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @multi_adamw_shape(%p: tensor<4xf32>, %q: tensor<8xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.multi_adamw_update' op exp_avg #1 must have shape [8]}}
  %0:6 = tg.multi_adamw_update (%p, %q), (%p, %q), (%p, %p), (%p, %q), %lr, %s
      : (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>)
  return
}

// -----

func.func @multi_adamw_beta1(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.multi_adamw_update' op beta1 must be in [0.000000e+00, 1.000000e+00), found 1.000000e+00}}
  %0:3 = tg.multi_adamw_update (%p), (%p), (%p), (%p), %lr, %s {beta1 = 1.0}
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_eps(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_update' op eps must be in [0.000000e+00, INF), found -1.000000e+00}}
  %0:3 = tg.adamw_update %p, %p, %p, %p, %lr, %s {eps = -1.0}
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_weight_decay(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_update' op weight_decay must be in [0.000000e+00, INF), found -5.000000e-01}}
  %0:3 = tg.adamw_update %p, %p, %p, %p, %lr, %s {weight_decay = -0.5}
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_grad_shape(%p: tensor<4xf32>, %g: tensor<4x1xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_update' op grad must have shape [4], found [4, 1]}}
  %0:3 = tg.adamw_update %p, %g, %p, %p, %lr, %s
      : (tensor<4xf32>, tensor<4x1xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_exp_avg_shape(%p: tensor<4xf32>, %m: tensor<8xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_update' op exp_avg must have shape [4], found [8]}}
  %0:3 = tg.adamw_update %p, %p, %m, %p, %lr, %s
      : (tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_exp_avg_sq_shape(%p: tensor<4xf32>, %v: tensor<2xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_update' op exp_avg_sq must have shape [4], found [2]}}
  %0:3 = tg.adamw_update %p, %p, %p, %v, %lr, %s
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>)
  return
}

// -----

func.func @adamw_new_param_type(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_update' op new_param must have type 'tensor<4xf32>', found 'tensor<4xf16>'}}
  %0:3 = tg.adamw_update %p, %p, %p, %p, %lr, %s
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4xf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_new_exp_avg_type(%p: tensor<4xf32>, %m: tensor<4xbf16>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_update' op new_exp_avg must have type 'tensor<4xbf16>', found 'tensor<4xf32>'}}
  %0:3 = tg.adamw_update %p, %p, %m, %p, %lr, %s
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_new_exp_avg_sq_type(%p: tensor<4xf32>, %lr: tensor<f32>, %s: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_update' op new_exp_avg_sq must have type 'tensor<4xf32>', found 'tensor<4xbf16>'}}
  %0:3 = tg.adamw_update %p, %p, %p, %p, %lr, %s
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>)
  return
}

//===----------------------------------------------------------------------===//
// global_norm and mixed precision
//===----------------------------------------------------------------------===//

// -----

func.func @global_norm_no_operands() {
  // expected-error @+1 {{'tg.global_norm' op needs at least one operand}}
  %0 = "tg.global_norm"() : () -> tensor<f32>
  return
}

// -----

func.func @global_norm_f16_result(%x: tensor<4xf16>) {
  // expected-error @+1 {{'tg.global_norm' op result #0 must be 0D tensor of 32-bit float values, but got 'tensor<f16>'}}
  %0 = tg.global_norm %x : (tensor<4xf16>) -> tensor<f16>
  return
}

// -----

func.func @all_finite_no_operands() {
  // expected-error @+1 {{'tg.all_finite' op needs at least one operand}}
  %0 = "tg.all_finite"() : () -> tensor<i1>
  return
}

// -----

func.func @unscale_shape(%g: tensor<4x8xf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'tg.unscale' op result must have shape [4, 8], found [8, 4]}}
  %0 = tg.unscale %g, %s : (tensor<4x8xf16>, tensor<f32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @growth_factor_one(%s: tensor<f32>, %t: tensor<i64>, %ok: tensor<i1>) {
  // expected-error @+1 {{'tg.update_loss_scale' op growth_factor must be > 1, found 1.000000e+00}}
  %0:2 = tg.update_loss_scale %s, %t, %ok {growth_factor = 1.0}
      : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

func.func @growth_factor_infinite(%s: tensor<f32>, %t: tensor<i64>, %ok: tensor<i1>) {
  // expected-error @+1 {{'tg.update_loss_scale' op growth_factor must be > 1, found INF}}
  %0:2 = tg.update_loss_scale %s, %t, %ok {growth_factor = 0x7FF0000000000000 : f64}
      : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

func.func @backoff_factor_one(%s: tensor<f32>, %t: tensor<i64>, %ok: tensor<i1>) {
  // expected-error @+1 {{'tg.update_loss_scale' op backoff_factor must be in (0, 1), found 1.000000e+00}}
  %0:2 = tg.update_loss_scale %s, %t, %ok {backoff_factor = 1.0}
      : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

func.func @backoff_factor_zero(%s: tensor<f32>, %t: tensor<i64>, %ok: tensor<i1>) {
  // expected-error @+1 {{'tg.update_loss_scale' op backoff_factor must be in (0, 1), found 0.000000e+00}}
  %0:2 = tg.update_loss_scale %s, %t, %ok {backoff_factor = 0.0}
      : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

func.func @growth_interval_zero(%s: tensor<f32>, %t: tensor<i64>, %ok: tensor<i1>) {
  // expected-error @+1 {{'tg.update_loss_scale' op growth_interval must be >= 1, found 0}}
  %0:2 = tg.update_loss_scale %s, %t, %ok {growth_interval = 0}
      : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return
}

//===----------------------------------------------------------------------===//
// #tg.init
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{unknown initialisation 'xavier', expected zeros, ones, constant, normal or uniform}}
func.func @init_unknown(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<xavier>}) {
  return
}

// -----

// `zeros` and `ones` take no numbers; the parser does not accept any.
// expected-error @+1 {{expected '>'}}
func.func @init_zeros_with_parameters(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<zeros(0.0, 1.0)>}) {
  return
}

// -----

// expected-error @+1 {{expected '('}}
func.func @init_normal_without_parameters(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal>}) {
  return
}

// -----

// expected-error @+1 {{initialisation parameters must be finite}}
func.func @init_not_finite(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal(0.0, 0x7FF0000000000000)>}) {
  return
}

// -----

// expected-error @+1 {{normal initialisation needs std > 0, found 0.000000e+00}}
func.func @init_normal_zero_std(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal(0.0, 0.0)>}) {
  return
}

// -----

// expected-error @+1 {{normal initialisation needs std > 0, found -2.000000e-02}}
func.func @init_normal_negative_std(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal(0.0, -0.02)>}) {
  return
}

// -----

// expected-error @+1 {{uniform initialisation needs low < high, found [1.000000e-01, 1.000000e-01)}}
func.func @init_uniform_empty(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<uniform(0.1, 0.1)>}) {
  return
}

// -----

// expected-error @+1 {{uniform initialisation needs low < high, found [1.000000e+00, -1.000000e+00)}}
func.func @init_uniform_reversed(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<uniform(1.0, -1.0)>}) {
  return
}

//===----------------------------------------------------------------------===//
// Argument attributes
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.param' must be a non-empty string, found 1 : i64}}
func.func @param_not_string(%w: tensor<4xf32> {tg.param = 1}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #1: 'tg.param' must be a non-empty string, found ""}}
func.func @param_empty(%x: tensor<4xf32> {tg.param = "x"}, %w: tensor<4xf32> {tg.param = ""}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.input' must be a non-empty string, found unit}}
func.func @input_not_string(%x: tensor<4xi64> {tg.input}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: carries both 'tg.param' and 'tg.input'; an argument is a parameter, a state or an input}}
func.func @param_and_input(%w: tensor<4xf32> {tg.param = "w", tg.input = "w"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: parameter 'w' must be a statically shaped f32, f16 or bf16 tensor (or, frozen, ui8 codes), found 'tensor<4xi64>'}}
func.func @integer_param(%w: tensor<4xi64> {tg.param = "w"}) {
  return
}

// -----

// ui8 codes are a parameter only when frozen (tg-quantize-frozen's).
// expected-error @+1 {{'func.func' op argument #0: parameter 'w' must be a statically shaped f32, f16 or bf16 tensor (or, frozen, ui8 codes), found 'tensor<4xui8>'}}
func.func @param_codes(%w: tensor<4xui8> {tg.param = "w"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: parameter 'w' must be a statically shaped f32, f16 or bf16 tensor (or, frozen, ui8 codes), found 'tensor<?xf32>'}}
func.func @dynamic_param(%w: tensor<?xf32> {tg.param = "w"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: parameter 'w' must be a statically shaped f32, f16 or bf16 tensor (or, frozen, ui8 codes), found 'f32'}}
func.func @scalar_param(%w: f32 {tg.param = "w"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: input 'x' must be a statically shaped tensor of a tg element type, found 'tensor<4xf64>'}}
func.func @f64_input(%x: tensor<4xf64> {tg.input = "x"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: input 'x' must be a statically shaped tensor of a tg element type, found 'tensor<4xi16>'}}
func.func @i16_input(%x: tensor<4xi16> {tg.input = "x"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: input 'x' must be a statically shaped tensor of a tg element type, found 'tensor<?x4xi64>'}}
func.func @dynamic_input(%x: tensor<?x4xi64> {tg.input = "x"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.frozen' is a unit attribute, found true}}
func.func @frozen_not_unit(%w: tensor<4xf32> {tg.param = "w", tg.frozen = true}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.init' must be a #tg.init attribute, found "zeros"}}
func.func @init_not_init_attr(%w: tensor<4xf32> {tg.param = "w", tg.init = "zeros"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.frozen' is only valid on a parameter ('tg.param')}}
func.func @frozen_input(%x: tensor<4xi64> {tg.input = "x", tg.frozen}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.init' is only valid on a parameter ('tg.param') or a state ('tg.state')}}
func.func @init_without_param(%w: tensor<4xf32> {tg.init = #tg.init<zeros>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #1: unknown tg argument attribute 'tg.parameter'}}
func.func @unknown_arg_attr(%w: tensor<4xf32> {tg.param = "w"}, %v: tensor<4xf32> {tg.parameter = "v"}) {
  return
}

//===----------------------------------------------------------------------===//
// tg.model and other operation attributes
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{'func.func' op 'tg.model' is a unit attribute, found true}}
func.func @model_not_unit(%x: tensor<4x10xf32> {tg.input = "x"}) -> tensor<f32> attributes {tg.model = true} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'builtin.module' op 'tg.model' is only valid on a func.func}}
module attributes {tg.model} {
}

// -----

// expected-error @+1 {{'func.func' op a tg.model function must have a body}}
func.func private @model_external(%x: tensor<4xf32> {tg.input = "x"}) -> tensor<f32> attributes {tg.model}

// -----

// expected-error @+1 {{'func.func' op argument #1 of a tg.model function must carry 'tg.param' or 'tg.input'}}
func.func @model_unnamed_argument(%w: tensor<4xf32> {tg.param = "w"}, %x: tensor<4xf32>) -> tensor<f32> attributes {tg.model} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op parameter name 'w' is used by arguments #0 and #2}}
func.func @model_duplicate_param(%w: tensor<4xf32> {tg.param = "w"},
                                 %x: tensor<4xi64> {tg.input = "x"},
                                 %v: tensor<8xf32> {tg.param = "w"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op input name 'tokens' is used by arguments #1 and #2}}
func.func @model_duplicate_input(%w: tensor<4xf32> {tg.param = "w"},
                                 %x: tensor<4xi64> {tg.input = "tokens"},
                                 %y: tensor<4xi64> {tg.input = "tokens"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op result #1 must be a metric (carry 'tg.metric'): only the loss and metrics are returned}}
func.func @model_two_results(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32>, tensor<f32>) attributes {tg.model} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0, %0 : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op metric result #1 must be a 0-d f32, f16 or bf16 tensor, found 'tensor<4xf32>'}}
func.func @vector_metric(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32>, tensor<4xf32> {tg.metric = "w"}) attributes {tg.model} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0, %w : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op metric result #1 must be a 0-d f32, f16 or bf16 tensor, found 'tensor<i64>'}}
func.func @integer_metric(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32> {tg.loss}, tensor<i64> {tg.metric = "n"}) attributes {tg.train_step} {
  %0 = tg.fill 0.0 : tensor<f32>
  %1 = tg.fill 1.0 : tensor<i64>
  return %0, %1 : tensor<f32>, tensor<i64>
}

// -----

// expected-error @+1 {{'func.func' op result #1: 'tg.metric' must be a non-empty string, found ""}}
func.func @unnamed_metric(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32>, tensor<f32> {tg.metric = ""}) attributes {tg.model} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0, %0 : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op a tg.model function must return one scalar loss (a 0-d f32, f16 or bf16 tensor), found}}
func.func @model_no_result(%w: tensor<4xf32> {tg.param = "w"}) attributes {tg.model} {
  return
}

// -----

// expected-error @+1 {{'func.func' op a tg.model function must return one scalar loss (a 0-d f32, f16 or bf16 tensor), found 'tensor<1xf32>'}}
func.func @model_non_scalar_loss(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<1xf32> attributes {tg.model} {
  %0 = tg.fill 0.0 : tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

// expected-error @+1 {{'func.func' op a tg.model function must return one scalar loss (a 0-d f32, f16 or bf16 tensor), found 'tensor<i64>'}}
func.func @model_integer_loss(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<i64> attributes {tg.model} {
  %0 = tg.fill 0.0 : tensor<i64>
  return %0 : tensor<i64>
}

// -----

// expected-error @+1 {{'func.func' op a tg.model function must return one scalar loss (a 0-d f32, f16 or bf16 tensor), found 'f32'}}
func.func @model_float_loss(%w: tensor<4xf32> {tg.param = "w"}) -> f32 attributes {tg.model} {
  %0 = arith.constant 0.0 : f32
  return %0 : f32
}

// -----

// expected-error @+1 {{'func.func' op unknown tg attribute 'tg.models'}}
func.func @unknown_function_attr() attributes {tg.models} {
  return
}

// -----

func.func @unknown_op_attr(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.neg' op unknown tg attribute 'tg.frozen'}}
  %0 = tg.neg %x {tg.frozen} : tensor<4xf32>
  return
}

// -----
//===----------------------------------------------------------------------===//
// The training-step convention (tg.train_step, tg.state, tg.loss, tg.update)
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'func.func' op 'tg.train_step' is a unit attribute, found 1 : i64}}
func.func @step_not_unit(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32> {tg.loss}) attributes {tg.train_step = 1} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'builtin.module' op 'tg.train_step' is only valid on a func.func}}
module attributes {tg.train_step} {
}

// -----

// expected-error @+1 {{'func.func' op a tg.train_step function must have a body}}
func.func private @step_external(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32> {tg.loss}) attributes {tg.train_step}

// -----

// expected-error @+1 {{'func.func' op argument #1 of a tg.train_step function must carry 'tg.param', 'tg.state' or 'tg.input'}}
func.func @step_unnamed_arg(%w: tensor<4xf32> {tg.param = "w"}, %x: tensor<4xf32>) -> (tensor<f32> {tg.loss}) attributes {tg.train_step} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op argument #1: 'tg.state' is only valid in a tg.train_step function}}
func.func @state_in_model(%w: tensor<4xf32> {tg.param = "w"}, %m: tensor<4xf32> {tg.state = "w.exp_avg"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op state name 'w' is used by arguments #0 and #1}}
func.func @state_name_clash(%w: tensor<4xf32> {tg.param = "w"}, %m: tensor<4xf32> {tg.state = "w"}) -> (tensor<f32> {tg.loss}) attributes {tg.train_step} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op argument #0: carries both 'tg.state' and 'tg.input'; an argument is a parameter, a state or an input}}
func.func @state_and_input(%m: tensor<4xf32> {tg.state = "m", tg.input = "m"}) -> (tensor<f32> {tg.loss}) attributes {tg.train_step} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op argument #0: state 'm' must be a statically shaped tensor of a tg element type, found 'tensor<4xf64>'}}
func.func @state_bad_type(%m: tensor<4xf64> {tg.state = "m"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.state' must be a non-empty string, found ""}}
func.func @state_empty(%m: tensor<4xf32> {tg.state = ""}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op results #0 and #1 both carry 'tg.loss'}}
func.func @two_losses(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32> {tg.loss}, tensor<f32> {tg.loss}) attributes {tg.train_step} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0, %0 : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op the loss (result #0) must be a 0-d f32, f16 or bf16 tensor, found 'tensor<4xf32>'}}
func.func @vector_loss(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<4xf32> {tg.loss}) attributes {tg.train_step} {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result #1 of a tg.train_step function must carry 'tg.loss', 'tg.grad', 'tg.update' or 'tg.metric'}}
func.func @result_without_role(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32> {tg.loss}, tensor<4xf32>) attributes {tg.train_step} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0, %w : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result #1 updates 'x', which is not a parameter or state argument}}
func.func @update_of_input(%w: tensor<4xf32> {tg.param = "w"}, %x: tensor<4xf32> {tg.input = "x"}) -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "x"}) attributes {tg.train_step} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0, %w : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result #1 updates 'w' of type 'tensor<4xf32>' with a value of type 'tensor<4xbf16>'}}
func.func @update_type(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32> {tg.loss}, tensor<4xbf16> {tg.update = "w"}) attributes {tg.train_step} {
  %0 = tg.fill 0.0 : tensor<f32>
  %1 = tg.cast %w : tensor<4xf32> -> tensor<4xbf16>
  return %0, %1 : tensor<f32>, tensor<4xbf16>
}

// -----

// An update that returns another argument than the one it names would be
// silently dropped by the planner (it writes nothing for a returned
// argument).
// expected-error @+1 {{'func.func' op result #1 updates 'w' but returns argument #1, not that tensor}}
func.func @update_returns_other_argument(%w: tensor<4xf32> {tg.param = "w"}, %v: tensor<4xf32> {tg.param = "v"}) -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"}) attributes {tg.train_step} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0, %v : tensor<f32>, tensor<4xf32>
}

// -----

// A tg.remat mark is a unit attribute on a tg op with results.
func.func @remat_mark(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.neg' op 'tg.remat' is a unit attribute on a tg op that recomputes a value}}
  %0 = tg.neg %x {tg.remat = 1} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op results #1 and #2 both update 'w'}}
func.func @double_update(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"}, tensor<4xf32> {tg.update = "w"}) attributes {tg.train_step} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0, %w, %w : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op a tg.train_step function must return the loss (a result carrying 'tg.loss')}}
func.func @no_loss(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<4xf32> {tg.update = "w"}) attributes {tg.train_step} {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result #0: 'tg.loss' is a unit attribute, found "yes"}}
func.func @loss_not_unit() -> (tensor<f32> {tg.loss = "yes"}) {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op result #0: 'tg.update' must be a non-empty string, found 3 : i64}}
func.func @update_not_string(%w: tensor<4xf32>) -> (tensor<4xf32> {tg.update = 3}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result #0: unknown tg result attribute 'tg.param'}}
func.func @unknown_result_attr(%w: tensor<4xf32>) -> (tensor<4xf32> {tg.param = "x"}) {
  return %w : tensor<4xf32>
}

// -----

// A model argument whose name is not a string is reported as such.
// expected-error @+1 {{'func.func' op argument #0: 'tg.param' must be a non-empty string, found 1 : i64}}
func.func @model_param_not_string(%w: tensor<4xf32> {tg.param = 1}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Parameters and inputs share one namespace.
// expected-error @+1 {{'func.func' op input name 'w' is used by arguments #0 and #1}}
func.func @param_input_clash(%w: tensor<4xf32> {tg.param = "w"}, %x: tensor<4xf32> {tg.input = "w"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @slice_offset_overflow(%x: tensor<8xf32>) {
  // expected-error @+1 {{'tg.slice' op slice of size [4] at offsets [9223372036854775807] does not fit in shape [8]}}
  %0 = tg.slice %x {offsets = array<i64: 9223372036854775807>} : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @layer_norm_infinite_epsilon(%x: tensor<2x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op epsilon must be non-negative and finite, found INF}}
  %0 = tg.layer_norm %x, %w, %w {epsilon = 0x7FF0000000000000 : f64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @loss_seed_on_add(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.add' op 'tg.loss_seed' is a unit attribute on the tg.fill that seeds the backward pass}}
  %0 = tg.add %a, %a {tg.loss_seed} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{expected ')'}}
func.func @constant_init_two(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<constant(1.0, 2.0)>}) {
  return
}

// -----

func.func @output_mask_size(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op output_mask has 2 entries for 3 results}}
  %0:3 = tg.layer_norm_grad %x, %w, %x {output_mask = array<i1: true, false>}
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @output_mask_none(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op output_mask computes no result}}
  %0:3 = tg.layer_norm_grad %x, %w, %x {output_mask = array<i1: false, false, false>}
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @output_mask_used(%q: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'tg.attention_grad' op result #1 is not computed (output_mask) but has uses}}
  %0:3 = tg.attention_grad %q, %q, %q, %q, %q {output_mask = array<i1: true, false, true>}
      : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
      -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return %0#1 : tensor<2x4x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.lora' must be {base = "<weight>", scale = <positive f64>, fan_in_fan_out = <bool>}, found {base = "w", fan_in_fan_out = true, scale = 0.000000e+00 : f64}}}
func.func @bad_lora(%b: tensor<4x2xf32> {tg.param = "m.lora_B.weight", tg.lora = {base = "w", scale = 0.0 : f64, fan_in_fan_out = true}}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.lora' is only valid on a parameter ('tg.param')}}
func.func @lora_on_input(%b: tensor<4x2xf32> {tg.input = "x", tg.lora = {base = "w", scale = 2.0 : f64, fan_in_fan_out = true}}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.quant4' must be {rows = <positive>, cols = <positive>, block_size = <even in [2, 4096]>, type = "nf4" | "fp4", absmax = "<parameter>"[, nested_absmax = "<parameter>", offset = "<parameter>"]}, found {absmax = "w.absmax", block_size = 63 : i64, cols = 4 : i64, rows = 4 : i64, type = "nf4"}}}
func.func @quant4_odd_block(%w: tensor<8xui8> {tg.param = "w", tg.frozen, tg.quant4 = {rows = 4, cols = 4, block_size = 63, type = "nf4", absmax = "w.absmax"}}) {
  return
}

// -----

// A nested absmax without its offset.
// expected-error @+1 {{'func.func' op argument #0: 'tg.quant4' must be {rows}}
func.func @quant4_half_nested(%w: tensor<8xui8> {tg.param = "w", tg.frozen, tg.quant4 = {rows = 4, cols = 4, block_size = 64, type = "nf4", absmax = "w.absmax", nested_absmax = "w.nested_absmax"}}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.quant4' is only valid on the 1-D ui8 codes of a frozen parameter ('tg.param', 'tg.frozen')}}
func.func @quant4_float(%w: tensor<4x4xf32> {tg.param = "w", tg.frozen, tg.quant4 = {rows = 4, cols = 4, block_size = 64, type = "fp4", absmax = "w.absmax"}}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.quant4' of a 4 x 5 weight needs 10 bytes of codes, found 'tensor<8xui8>'}}
func.func @quant4_short(%w: tensor<8xui8> {tg.param = "w", tg.frozen, tg.quant4 = {rows = 4, cols = 5, block_size = 64, type = "nf4", absmax = "w.absmax"}}) {
  return
}

// -----

// zero3's part of the codes: the whole (tg.shard_of) must fit the layout.
// expected-error @+1 {{'func.func' op argument #0: 'tg.quant4' of a 4 x 5 weight needs 10 bytes of codes, found a part of array<i64: 8>}}
func.func @quant4_short_part(%w: tensor<4xui8> {tg.param = "w", tg.frozen, tg.shard_of = array<i64: 8>, tg.quant4 = {rows = 4, cols = 5, block_size = 64, type = "nf4", absmax = "w.absmax"}}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op result #1 is the gradient of 'x', which is not a parameter argument}}
func.func @grad_of_input(%w: tensor<4xf32> {tg.param = "w"}, %x: tensor<4xf32> {tg.input = "x"}) -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.grad = "x"}) attributes {tg.train_step} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0, %w : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result #1 is the gradient of 'w' of type 'tensor<4xf32>' but has type 'tensor<4xbf16>'}}
func.func @grad_type(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32> {tg.loss}, tensor<4xbf16> {tg.grad = "w"}) attributes {tg.train_step} {
  %0 = tg.fill 0.0 : tensor<f32>
  %1 = tg.cast %w : tensor<4xf32> -> tensor<4xbf16>
  return %0, %1 : tensor<f32>, tensor<4xbf16>
}

// -----

// expected-error @+1 {{'func.func' op results #1 and #2 are both the gradient of 'w'}}
func.func @double_grad(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.grad = "w"}, tensor<4xf32> {tg.grad = "w"}) attributes {tg.train_step} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0, %w, %w : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// ui8 (the codes of 8-bit optimizer state) is valid only as state.
// expected-error @+1 {{'func.func' op argument #0: input 'codes' must be a statically shaped tensor of a tg element type, found 'tensor<4xui8>'}}
func.func @ui8_input(%c: tensor<4xui8> {tg.input = "codes"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @adamw_8bit_block(%p: tensor<300xf32>, %g: tensor<300xf32>, %q: tensor<300xui8>, %a: tensor<3xf32>, %m: tensor<256xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_8bit_update' op block_size must be a power of two in [1, 4096], found 100}}
  %0:5 = tg.adamw_8bit_update %p, %g, %q, %a, %q, %a, %m, %m, %lr, %t {block_size = 100 : i64} : (tensor<300xf32>, tensor<300xf32>, tensor<300xui8>, tensor<3xf32>, tensor<300xui8>, tensor<3xf32>, tensor<256xf32>, tensor<256xf32>, tensor<f32>, tensor<i64>) -> (tensor<300xf32>, tensor<300xui8>, tensor<3xf32>, tensor<300xui8>, tensor<3xf32>)
  return
}

// -----

func.func @adamw_8bit_absmax(%p: tensor<300xf32>, %g: tensor<300xf32>, %q: tensor<300xui8>, %a: tensor<1xf32>, %m: tensor<256xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_8bit_update' op an absmax must hold one value per block of 256 elements: 2 for 300 elements, found 1}}
  %0:5 = tg.adamw_8bit_update %p, %g, %q, %a, %q, %a, %m, %m, %lr, %t : (tensor<300xf32>, tensor<300xf32>, tensor<300xui8>, tensor<1xf32>, tensor<300xui8>, tensor<1xf32>, tensor<256xf32>, tensor<256xf32>, tensor<f32>, tensor<i64>) -> (tensor<300xf32>, tensor<300xui8>, tensor<1xf32>, tensor<300xui8>, tensor<1xf32>)
  return
}

// -----

func.func @adamw_8bit_codes(%p: tensor<300xf32>, %g: tensor<300xf32>, %q: tensor<299xui8>, %a: tensor<2xf32>, %m: tensor<256xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_8bit_update' op quantized state must have shape [300], found [299]}}
  %0:5 = tg.adamw_8bit_update %p, %g, %q, %a, %q, %a, %m, %m, %lr, %t : (tensor<300xf32>, tensor<300xf32>, tensor<299xui8>, tensor<2xf32>, tensor<299xui8>, tensor<2xf32>, tensor<256xf32>, tensor<256xf32>, tensor<f32>, tensor<i64>) -> (tensor<300xf32>, tensor<299xui8>, tensor<2xf32>, tensor<299xui8>, tensor<2xf32>)
  return
}

// -----

func.func @adamw_8bit_map(%p: tensor<300xf32>, %g: tensor<300xf32>, %q: tensor<300xui8>, %a: tensor<2xf32>, %m: tensor<255xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_8bit_update' op a quantization map must have 256 entries, found 255}}
  %0:5 = tg.adamw_8bit_update %p, %g, %q, %a, %q, %a, %m, %m, %lr, %t : (tensor<300xf32>, tensor<300xf32>, tensor<300xui8>, tensor<2xf32>, tensor<300xui8>, tensor<2xf32>, tensor<255xf32>, tensor<255xf32>, tensor<f32>, tensor<i64>) -> (tensor<300xf32>, tensor<300xui8>, tensor<2xf32>, tensor<300xui8>, tensor<2xf32>)
  return
}

// -----

func.func @adamw_8bit_codes_type(%p: tensor<300xf32>, %g: tensor<300xf32>, %q: tensor<300xi8>, %a: tensor<2xf32>, %m: tensor<256xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_8bit_update' op operand #2 must be statically shaped tensor of 8-bit unsigned integer values}}
  %0:5 = tg.adamw_8bit_update %p, %g, %q, %a, %q, %a, %m, %m, %lr, %t : (tensor<300xf32>, tensor<300xf32>, tensor<300xi8>, tensor<2xf32>, tensor<300xi8>, tensor<2xf32>, tensor<256xf32>, tensor<256xf32>, tensor<f32>, tensor<i64>) -> (tensor<300xf32>, tensor<300xi8>, tensor<2xf32>, tensor<300xi8>, tensor<2xf32>)
  return
}

// -----

func.func @adamw_8bit_beta(%p: tensor<300xf32>, %g: tensor<300xf32>, %q: tensor<300xui8>, %a: tensor<2xf32>, %m: tensor<256xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_8bit_update' op beta2 must be in [0.000000e+00, 1.000000e+00), found 1.000000e+00}}
  %0:5 = tg.adamw_8bit_update %p, %g, %q, %a, %q, %a, %m, %m, %lr, %t {beta2 = 1.0 : f64} : (tensor<300xf32>, tensor<300xf32>, tensor<300xui8>, tensor<2xf32>, tensor<300xui8>, tensor<2xf32>, tensor<256xf32>, tensor<256xf32>, tensor<f32>, tensor<i64>) -> (tensor<300xf32>, tensor<300xui8>, tensor<2xf32>, tensor<300xui8>, tensor<2xf32>)
  return
}

// -----

func.func @matmul_4bit_input(%x: tensor<4x32xf32>, %c: tensor<1536xui8>, %a: tensor<48xf32>, %m: tensor<16xf32>) {
  // expected-error @+1 {{'tg.matmul_4bit' op input's last dimension is 32 but the 64 x 48 weight (transposed) needs 48}}
  %0 = tg.matmul_4bit %x, %c, %a, %m {rows = 64 : i64, cols = 48 : i64} : (tensor<4x32xf32>, tensor<1536xui8>, tensor<48xf32>, tensor<16xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @matmul_4bit_codes(%x: tensor<4x48xf32>, %c: tensor<1535xui8>, %a: tensor<48xf32>, %m: tensor<16xf32>) {
  // expected-error @+1 {{'tg.matmul_4bit' op codes must have shape [1536], found [1535]}}
  %0 = tg.matmul_4bit %x, %c, %a, %m {rows = 64 : i64, cols = 48 : i64} : (tensor<4x48xf32>, tensor<1535xui8>, tensor<48xf32>, tensor<16xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @matmul_4bit_absmax(%x: tensor<4x48xf32>, %c: tensor<1536xui8>, %a: tensor<24xf32>, %m: tensor<16xf32>) {
  // expected-error @+1 {{'tg.matmul_4bit' op absmax must have shape [48], found [24]}}
  %0 = tg.matmul_4bit %x, %c, %a, %m {rows = 64 : i64, cols = 48 : i64} : (tensor<4x48xf32>, tensor<1536xui8>, tensor<24xf32>, tensor<16xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @matmul_4bit_nested(%x: tensor<4x48xf32>, %c: tensor<1536xui8>, %a: tensor<48xui8>, %m: tensor<16xf32>) {
  // expected-error @+1 {{'tg.matmul_4bit' op a double-quantized (ui8) absmax needs the three nested operands (nested_absmax, nested_map, offset), found 0}}
  %0 = tg.matmul_4bit %x, %c, %a, %m {rows = 64 : i64, cols = 48 : i64} : (tensor<4x48xf32>, tensor<1536xui8>, tensor<48xui8>, tensor<16xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @matmul_4bit_block(%x: tensor<4x48xf32>, %c: tensor<1536xui8>, %a: tensor<48xf32>, %m: tensor<16xf32>) {
  // expected-error @+1 {{'tg.matmul_4bit' op block_size must be even and in [2, 4096], found 63}}
  %0 = tg.matmul_4bit %x, %c, %a, %m {rows = 64 : i64, cols = 48 : i64, block_size = 63 : i64} : (tensor<4x48xf32>, tensor<1536xui8>, tensor<48xf32>, tensor<16xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @matmul_4bit_map(%x: tensor<4x48xf32>, %c: tensor<1536xui8>, %a: tensor<48xf32>, %m: tensor<256xf32>) {
  // expected-error @+1 {{'tg.matmul_4bit' op quant_map must have shape [16], found [256]}}
  %0 = tg.matmul_4bit %x, %c, %a, %m {rows = 64 : i64, cols = 48 : i64} : (tensor<4x48xf32>, tensor<1536xui8>, tensor<48xf32>, tensor<256xf32>) -> tensor<4x64xf32>
  return
}

// -----

func.func @adamw_4bit_block(%p: tensor<300xf32>, %g: tensor<300xf32>, %q: tensor<150xui8>, %a: tensor<300xf32>, %m: tensor<16xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_4bit_update' op block_size must be a power of two in [2, 4096], found 1}}
  %0:5 = tg.adamw_4bit_update %p, %g, %q, %a, %q, %a, %m, %m, %lr, %t {block_size = 1 : i64} : (tensor<300xf32>, tensor<300xf32>, tensor<150xui8>, tensor<300xf32>, tensor<150xui8>, tensor<300xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f32>, tensor<i64>) -> (tensor<300xf32>, tensor<150xui8>, tensor<300xf32>, tensor<150xui8>, tensor<300xf32>)
  return
}

// -----

func.func @adamw_4bit_codes(%p: tensor<301xf32>, %g: tensor<301xf32>, %q: tensor<301xui8>, %a: tensor<3xf32>, %m: tensor<16xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_4bit_update' op packed 4-bit state must have shape [151], found [301]}}
  %0:5 = tg.adamw_4bit_update %p, %g, %q, %a, %q, %a, %m, %m, %lr, %t : (tensor<301xf32>, tensor<301xf32>, tensor<301xui8>, tensor<3xf32>, tensor<301xui8>, tensor<3xf32>, tensor<16xf32>, tensor<16xf32>, tensor<f32>, tensor<i64>) -> (tensor<301xf32>, tensor<301xui8>, tensor<3xf32>, tensor<301xui8>, tensor<3xf32>)
  return
}

// -----

func.func @adamw_4bit_map(%p: tensor<301xf32>, %g: tensor<301xf32>, %q: tensor<151xui8>, %a: tensor<3xf32>, %m: tensor<256xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.adamw_4bit_update' op a quantization map must have 16 entries, found 256}}
  %0:5 = tg.adamw_4bit_update %p, %g, %q, %a, %q, %a, %m, %m, %lr, %t : (tensor<301xf32>, tensor<301xf32>, tensor<151xui8>, tensor<3xf32>, tensor<151xui8>, tensor<3xf32>, tensor<256xf32>, tensor<256xf32>, tensor<f32>, tensor<i64>) -> (tensor<301xf32>, tensor<151xui8>, tensor<3xf32>, tensor<151xui8>, tensor<3xf32>)
  return
}

// -----

func.func @sgd_8bit_momentum(%p: tensor<300xf32>, %g: tensor<300xf32>, %q: tensor<300xui8>, %a: tensor<2xf32>, %m: tensor<256xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_8bit_update' op momentum must be > 0 (8-bit state is the momentum buffer), found 0}}
  %0:3 = tg.sgd_8bit_update %p, %g, %q, %a, %m, %lr, %t {momentum = 0.0 : f64} : (tensor<300xf32>, tensor<300xf32>, tensor<300xui8>, tensor<2xf32>, tensor<256xf32>, tensor<f32>, tensor<i64>) -> (tensor<300xf32>, tensor<300xui8>, tensor<2xf32>)
  return
}

// -----

func.func @sgd_8bit_result(%p: tensor<300xf32>, %g: tensor<300xf32>, %q: tensor<300xui8>, %a: tensor<2xf32>, %m: tensor<256xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.sgd_8bit_update' op new_momentum_absmax must have type 'tensor<2xf32>', found 'tensor<3xf32>'}}
  %0:3 = tg.sgd_8bit_update %p, %g, %q, %a, %m, %lr, %t : (tensor<300xf32>, tensor<300xf32>, tensor<300xui8>, tensor<2xf32>, tensor<256xf32>, tensor<f32>, tensor<i64>) -> (tensor<300xf32>, tensor<300xui8>, tensor<3xf32>)
  return
}

// -----

func.func @adafactor_state_count(%p: tensor<4x6xf32>, %g: tensor<4x6xf32>, %v: tensor<4x6xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.adafactor_update' op a parameter of rank 2 has 2 state tensors (row and column second moments), found 1}}
  %0:2 = tg.adafactor_update %p, %g, [%v], %lr, %t : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<f32>, tensor<i64>) -> (tensor<4x6xf32>, tensor<4x6xf32>)
  return
}

// -----

func.func @adafactor_col_shape(%p: tensor<4x6xf32>, %g: tensor<4x6xf32>, %r: tensor<4xf32>, %c: tensor<4xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.adafactor_update' op state must have shape [6], found [4]}}
  %0:3 = tg.adafactor_update %p, %g, [%r, %c], %lr, %t : (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) -> (tensor<4x6xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adafactor_decay(%p: tensor<6xf32>, %g: tensor<6xf32>, %v: tensor<6xf32>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.adafactor_update' op decay_rate must be negative, found 8.000000e-01}}
  %0:2 = tg.adafactor_update %p, %g, [%v], %lr, %t {decay_rate = 0.8 : f64} : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<f32>, tensor<i64>) -> (tensor<6xf32>, tensor<6xf32>)
  return
}

// -----

func.func @adafactor_state_type(%p: tensor<6xbf16>, %g: tensor<6xbf16>, %v: tensor<6xbf16>, %lr: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'tg.adafactor_update' op Adafactor state must be f32, found 'tensor<6xbf16>'}}
  %0:2 = tg.adafactor_update %p, %g, [%v], %lr, %t : (tensor<6xbf16>, tensor<6xbf16>, tensor<6xbf16>, tensor<f32>, tensor<i64>) -> (tensor<6xbf16>, tensor<6xbf16>)
  return
}

// -----

// expected-error @+1 {{'tg.hf_config' is not JSON}}
func.func @hf_config_text(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<f32> attributes {tg.model, tg.hf_config = "{\"model_type\": "} {
  %0 = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'tg.hf_config' is not a JSON object}}
func.func @hf_config_array(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<f32> attributes {tg.model, tg.hf_config = "[1, 2]"} {
  %0 = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'tg.hf_config' is a string on a tg.model function}}
func.func @hf_config_model(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<f32> attributes {tg.hf_config = "{}"} {
  %0 = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'tg.generator' is a dictionary with a string 'model' and an integer 'batch' on a tg.model function}}
func.func @generator(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<f32> attributes {tg.model, tg.generator = {model = "gpt2"}} {
  %0 = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'tg.grad_accum' must be {steps = K (>= 2), grad_step = @micro_step}}}
func.func @accum(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32> {tg.loss}) attributes {tg.train_step, tg.grad_accum = {steps = 1 : i64, grad_step = @micro}} {
  %0 = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'tg.grad_step' marks a func.func that is not a tg.train_step}}
func.func @both(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<f32> {tg.loss}) attributes {tg.train_step, tg.grad_step} {
  %0 = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{a tg.train_step function must return the loss}}
func.func @micro(%w: tensor<4xf32> {tg.param = "w"}, %s: tensor<4xf32> {tg.state = "grad_accum.w"}) -> (tensor<4xf32> {tg.update = "grad_accum.w"}) attributes {tg.grad_step} {
  return %s : tensor<4xf32>
}

// -----

func.func @matmul_bias_grad_rows(%x: tensor<8x16xf32>, %dy: tensor<6x4xf32>) {
  // expected-error @+1 {{'tg.matmul_bias_grad' op operands' rows differ: 8 (lhs) and 6 (rhs)}}
  %p, %b = tg.matmul_bias_grad %x, %dy : (tensor<8x16xf32>, tensor<6x4xf32>) -> (tensor<16x4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @matmul_bias_grad_rank(%x: tensor<2x8x16xf32>, %dy: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'tg.matmul_bias_grad' op operands must have rank 2, found ranks 3 and 3}}
  %p, %b = tg.matmul_bias_grad %x, %dy : (tensor<2x8x16xf32>, tensor<2x8x4xf32>) -> (tensor<16x4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @matmul_bias_grad_bias_shape(%x: tensor<8x16xf32>, %dy: tensor<8x4xf32>) {
  // expected-error @+1 {{'tg.matmul_bias_grad' op bias_grad must have shape [16], found [4]}}
  %p, %b = tg.matmul_bias_grad %x, %dy {bias_of_lhs = true} : (tensor<8x16xf32>, tensor<8x4xf32>) -> (tensor<16x4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @matmul_bias_grad_type(%x: tensor<8x16xbf16>, %dy: tensor<8x4xbf16>) {
  // expected-error @+1 {{'tg.matmul_bias_grad' op element types must match, found 'bf16' and 'f32'}}
  %p, %b = tg.matmul_bias_grad %x, %dy : (tensor<8x16xbf16>, tensor<8x4xbf16>) -> (tensor<16x4xbf16>, tensor<4xf32>)
  return
}

// -----

func.func @matmul_gelu_grad_preactivation(%dy: tensor<8x4xf32>, %w: tensor<16x4xf32>, %pre: tensor<8x12xf32>) {
  // expected-error @+1 {{'tg.matmul_gelu_grad' op the product [8, 16] and the preactivation [8, 12] differ in shape}}
  %r, %b = tg.matmul_gelu_grad %dy, %w, %pre {transpose_rhs = true} : (tensor<8x4xf32>, tensor<16x4xf32>, tensor<8x12xf32>) -> (tensor<8x12xf32>, tensor<12xf32>)
  return
}

// -----

func.func @matmul_gelu_grad_weight_rank(%dy: tensor<8x4xf32>, %w: tensor<1x16x4xf32>, %pre: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.matmul_gelu_grad' op weight must have rank 2, found rank 3}}
  %r, %b = tg.matmul_gelu_grad %dy, %w, %pre {transpose_rhs = true} : (tensor<8x4xf32>, tensor<1x16x4xf32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @matmul_gelu_grad_bias(%dy: tensor<8x4xf32>, %w: tensor<4x16xf32>, %pre: tensor<8x16xf32>) {
  // expected-error @+1 {{'tg.matmul_gelu_grad' op bias_grad must have shape [16], found [4]}}
  %r, %b = tg.matmul_gelu_grad %dy, %w, %pre : (tensor<8x4xf32>, tensor<4x16xf32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<4xf32>)
  return
}

// -----

func.func @linear_bias_shape(%x: tensor<2x4xf32>, %w: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'tg.linear' op bias must be [3], the weight's columns}}
  %0 = tg.linear %x, %w, %b : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @linear_gelu_needs_preactivation(%x: tensor<2x4xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'tg.linear' op with gelu returns the pre-activation too}}
  %0 = tg.linear %x, %w, %b {gelu = true} : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @linear_mixed_result(%x: tensor<2x4xbf16>, %w: tensor<4x3xbf16>, %b: tensor<3xf16>) {
  // expected-error @+1 {{'tg.linear' op}}
  %0 = tg.linear %x, %w, %b : (tensor<2x4xbf16>, tensor<4x3xbf16>, tensor<3xf16>) -> tensor<2x3xf32>
  return
}

// -----

func.func @linear_result_type(%x: tensor<2x4xbf16>, %w: tensor<4x3xbf16>, %b: tensor<3xf16>) {
  // expected-error @+1 {{'tg.linear' op result must be in the operands' type or f32, found 'f16'}}
  %0 = tg.linear %x, %w, %b : (tensor<2x4xbf16>, tensor<4x3xbf16>, tensor<3xf16>) -> tensor<2x3xf16>
  return
}

// -----

func.func @offload_type(%x: tensor<4x8xf32>, %h: tensor<4x8xbf16>) {
  // expected-error @+1 {{'tg.offload' op failed to verify that all of {source, destination, result} have same type}}
  %0 = tg.offload %x, %h : (tensor<4x8xf32>, tensor<4x8xbf16>) -> tensor<4x8xf32>
  return
}

// -----

func.func @reload_type(%h: tensor<4x8xf32>) {
  // expected-error @+1 {{'tg.reload' op failed to verify that all of {source, result} have same type}}
  %0 = tg.reload %h : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @multi_cast_counts(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'tg.multi_cast' op expects as many results as operands, at least one, found 2 operands and 1 results}}
  %0 = tg.multi_cast %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xbf16>
  return
}

// -----

func.func @multi_cast_shape(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'tg.multi_cast' op result 1 must have the shape of operand 1, found 'tensor<5xbf16>' for 'tensor<4xf32>'}}
  %0:2 = tg.multi_cast %a, %b : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xbf16>, tensor<5xbf16>)
  return
}

// -----

func.func @layer_norm_sum_without_addend(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op has a sum result exactly when it has an addend}}
  %0:2 = tg.layer_norm %x, %w, %w : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @layer_norm_addend_shape(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm' op addend shape [8] must be the input's, [4, 8]}}
  %0:2 = tg.layer_norm %x, %w, %w plus %w : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @layer_norm_sum_type(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %r: tensor<4x8xbf16>) {
  // expected-error @+1 {{'tg.layer_norm' op sum must have type 'tensor<4x8xf32>', found 'tensor<4x8xbf16>'}}
  %0:2 = tg.layer_norm %x, %w, %w plus %r : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>)
  return
}

// -----

func.func @rms_norm_addend_types(%x: tensor<4x8xf16>, %w: tensor<8xf16>, %r: tensor<4x8xbf16>) {
  // expected-error @+1 {{'tg.rms_norm' op input and addend element types do not mix, found 'f16' and 'bf16'}}
  %0:2 = tg.rms_norm %x, %w plus %r : (tensor<4x8xf16>, tensor<8xf16>, tensor<4x8xbf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>)
  return
}

// -----

func.func @layer_norm_addend_weight_type(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>, %r: tensor<4x8xf32>) {
  // The sum of a bf16 input and an f32 addend is f32, and so must the
  // parameters be.
  // expected-error @+1 {{'tg.layer_norm' op element types must match, found 'f32' and 'bf16'}}
  %0:2 = tg.layer_norm %x, %w, %w plus %r : (tensor<4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @layer_norm_grad_rounded_type(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.layer_norm_grad' op rounded_input_grad must be an f32 input_grad's shape in f16 or bf16, found 'tensor<4x8xf32>' for 'tensor<4x8xf32>'}}
  %0:4 = tg.layer_norm_grad %x, %w, %x : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @rms_norm_grad_rounded_not_computed(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'tg.rms_norm_grad' op rounded_input_grad needs input_grad computed}}
  %0:3 = tg.rms_norm_grad %x, %w, %x {output_mask = array<i1: false, true, true>} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xbf16>)
  return
}

// -----

func.func @rope_bshd_rank(%x: tensor<4x8x16xf32>, %f: tensor<8xf32>) {
  // expected-error @+1 {{'tg.rope' op bshd input must be [B, T, H, D], found rank 3}}
  %0 = tg.rope %x, %f {bshd = true} : (tensor<4x8x16xf32>, tensor<8xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

// expected-error @+1 {{'tg.hf_config_refused' is a string on a tg.model function}}
func.func @hf_config_refused(%w: tensor<4xf32> {tg.param = "w"}) -> tensor<f32> attributes {tg.model, tg.hf_config_refused = 3} {
  %0 = tg.reduce_sum %w {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.copy_of' is only valid on a frozen parameter ('tg.param', 'tg.frozen')}}
func.func @copy_of_trained(%w: tensor<4xf32> {tg.param = "reference.w", tg.copy_of = "w"}) -> tensor<f32> attributes {tg.model} {
  %0 = tg.fill 0.0 : tensor<f32>
  return %0 : tensor<f32>
}

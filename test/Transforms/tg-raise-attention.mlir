// RUN: tgc-opt %s --tg-raise-attention | FileCheck %s

// GPT-2's eager attention as tgc-import traces it: K transposed, heads
// merged for the products, the scores divided by sqrt(D) (the default
// scale), a causal boolean mask kept by tg.where with the lowest float.
// CHECK-LABEL: func.func @gpt2_style(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<1x2x4x8xf32>, %[[K:[^:]*]]: tensor<1x2x4x8xf32>, %[[V:[^:]*]]: tensor<1x2x4x8xf32>)
// CHECK-NEXT: %[[A:.*]] = tg.attention %[[Q]], %[[K]], %[[V]] {causal = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT: return %[[A]]
func.func @gpt2_style(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = tg.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %q3 = tg.reshape %q : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %kt3 = tg.reshape %kt : tensor<1x2x8x4xf32> -> tensor<2x8x4xf32>
  %s3 = tg.matmul %q3, %kt3 : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %s = tg.reshape %s3 : tensor<2x4x4xf32> -> tensor<1x2x4x4xf32>
  %root = tg.constant dense<2.82842708> : tensor<f32>
  %scaled = tg.div %s, %root : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %keep = tg.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %lowest = tg.constant dense<-3.40282347E+38> : tensor<f32>
  %masked = tg.where %keep, %scaled, %lowest : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = tg.softmax %masked {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %p3 = tg.reshape %p : tensor<1x2x4x4xf32> -> tensor<2x4x4xf32>
  %v3 = tg.reshape %v : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %o3 = tg.matmul %p3, %v3 : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = tg.reshape %o3 : tensor<2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// Mistral's window in an additive mask (0 kept, lowest hidden) expanded
// over the batch, a scale of 0.5 by multiplication, K by transpose_rhs.
// CHECK-LABEL: func.func @window(
// CHECK-NEXT: tg.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 5.000000e-01 : f64, window = 2 : i64}
// CHECK-NOT: tg.softmax
func.func @window(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32> {
  %s = tg.matmul %q, %k {transpose_rhs = true} : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x4xf32>
  %half = tg.constant dense<5.000000e-01> : tensor<f32>
  %scaled = tg.mul %s, %half : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %mask = tg.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, 0.0, 0.0, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, 0.0, 0.0]]], [[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [-3.40282347E+38, 0.0, 0.0, -3.40282347E+38], [-3.40282347E+38, -3.40282347E+38, 0.0, 0.0]]]]> : tensor<2x1x4x4xf32>
  %masked = tg.add %scaled, %mask : (tensor<2x2x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = tg.softmax %masked {axis = 3 : i64} : tensor<2x2x4x4xf32>
  %o = tg.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// BERT's padding mask, (1 - mask) * lowest added to the scores: key_mask.
// No scale in the scores: the scale is 1.
// CHECK-LABEL: func.func @padding_mask(
// CHECK-SAME: %[[MASK:[^:]*]]: tensor<1x4xi64>)
// CHECK-NEXT: tg.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[MASK]] {scale = 1.000000e+00 : f64}
// CHECK-NEXT: return
func.func @padding_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<1x4xi64>) -> tensor<1x2x4x8xf32> {
  %s = tg.matmul %q, %k {transpose_rhs = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %m4 = tg.reshape %mask : tensor<1x4xi64> -> tensor<1x1x1x4xi64>
  %mf = tg.cast %m4 : tensor<1x1x1x4xi64> -> tensor<1x1x1x4xf32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %hidden = tg.sub %one, %mf : (tensor<f32>, tensor<1x1x1x4xf32>) -> tensor<1x1x1x4xf32>
  %lowest = tg.constant dense<-3.40282347E+38> : tensor<f32>
  %bias = tg.mul %hidden, %lowest : (tensor<1x1x1x4xf32>, tensor<f32>) -> tensor<1x1x1x4xf32>
  %masked = tg.add %s, %bias : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %p = tg.softmax %masked {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = tg.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// Keys and values repeated for two query heads each (repeat_kv): the
// attention reads them unrepeated (grouped-query attention).
// CHECK-LABEL: func.func @grouped(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<1x2x4x8xf32>, %[[K:[^:]*]]: tensor<1x1x4x8xf32>, %[[V:[^:]*]]: tensor<1x1x4x8xf32>)
// CHECK-NEXT: tg.attention %[[Q]], %[[K]], %[[V]] {scale = 1.000000e+00 : f64} : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
func.func @grouped(%q: tensor<1x2x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %k5 = tg.reshape %k : tensor<1x1x4x8xf32> -> tensor<1x1x1x4x8xf32>
  %kb = tg.broadcast_to %k5 : tensor<1x1x1x4x8xf32> -> tensor<1x1x2x4x8xf32>
  %kr = tg.reshape %kb : tensor<1x1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  %v5 = tg.reshape %v : tensor<1x1x4x8xf32> -> tensor<1x1x1x4x8xf32>
  %vb = tg.broadcast_to %v5 : tensor<1x1x1x4x8xf32> -> tensor<1x1x2x4x8xf32>
  %vr = tg.reshape %vb : tensor<1x1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  %s = tg.matmul %q, %kr {transpose_rhs = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %p = tg.softmax %s {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = tg.matmul %p, %vr : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// One key and value head broadcast to every query head (Falcon's
// multi-query attention, K^T broadcast before the batched matmul): the
// attention reads the one head.
// CHECK-LABEL: func.func @multi_query(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<2x4x4x8xf32>, %[[K:[^:]*]]: tensor<2x1x4x8xf32>, %[[V:[^:]*]]: tensor<2x1x4x8xf32>)
// CHECK-NEXT: tg.attention %[[Q]], %[[K]], %[[V]] : (tensor<2x4x4x8xf32>, tensor<2x1x4x8xf32>, tensor<2x1x4x8xf32>) -> tensor<2x4x4x8xf32>
func.func @multi_query(%q: tensor<2x4x4x8xf32>, %k: tensor<2x1x4x8xf32>, %v: tensor<2x1x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %q3 = tg.reshape %q : tensor<2x4x4x8xf32> -> tensor<8x4x8xf32>
  %kt = tg.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<2x1x4x8xf32> -> tensor<2x1x8x4xf32>
  %ktb = tg.broadcast_to %kt : tensor<2x1x8x4xf32> -> tensor<2x4x8x4xf32>
  %kt3 = tg.reshape %ktb : tensor<2x4x8x4xf32> -> tensor<8x8x4xf32>
  %s3 = tg.matmul %q3, %kt3 : (tensor<8x4x8xf32>, tensor<8x8x4xf32>) -> tensor<8x4x4xf32>
  %s = tg.reshape %s3 : tensor<8x4x4xf32> -> tensor<2x4x4x4xf32>
  %sqrt = tg.constant dense<2.82842708> : tensor<f32>
  %scaled = tg.div %s, %sqrt : (tensor<2x4x4x4xf32>, tensor<f32>) -> tensor<2x4x4x4xf32>
  %p = tg.softmax %scaled {axis = 3 : i64} : tensor<2x4x4x4xf32>
  %vb = tg.broadcast_to %v : tensor<2x1x4x8xf32> -> tensor<2x4x4x8xf32>
  %o = tg.matmul %p, %vb : (tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// Gemma 2's soft-capped scores: scaled, then cap * tanh(s / cap), then the
// causal mask: the cap becomes tg.attention's softcap.
// CHECK-LABEL: func.func @softcap(
// CHECK-NEXT: tg.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 5.000000e-01 : f64, softcap = 5.000000e+01 : f64}
// CHECK-NEXT: return
func.func @softcap(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = tg.matmul %q, %k {transpose_rhs = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %half = tg.constant dense<5.000000e-01> : tensor<f32>
  %scaled = tg.mul %s, %half : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %cap = tg.constant dense<5.000000e+01> : tensor<f32>
  %divided = tg.div %scaled, %cap : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %t = tg.tanh %divided : tensor<1x2x4x4xf32>
  %capped = tg.mul %t, %cap : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %keep = tg.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %lowest = tg.constant dense<-3.40282347E+38> : tensor<f32>
  %masked = tg.where %keep, %capped, %lowest : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = tg.softmax %masked {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = tg.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// Left alone: a cap applied to masked scores (tanh of the lowest float is
// -1, so a hidden key would be seen), and two different caps.
// CHECK-LABEL: func.func @masked_then_capped(
// CHECK-NOT: tg.attention
// CHECK: tg.softmax
func.func @masked_then_capped(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = tg.matmul %q, %k {transpose_rhs = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %keep = tg.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %lowest = tg.constant dense<-3.40282347E+38> : tensor<f32>
  %masked = tg.where %keep, %s, %lowest : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %cap = tg.constant dense<5.000000e+01> : tensor<f32>
  %divided = tg.div %masked, %cap : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %t = tg.tanh %divided : tensor<1x2x4x4xf32>
  %capped = tg.mul %t, %cap : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = tg.softmax %capped {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = tg.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}
// CHECK-LABEL: func.func @two_caps(
// CHECK-NOT: tg.attention
// CHECK: tg.softmax
func.func @two_caps(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = tg.matmul %q, %k {transpose_rhs = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %c1 = tg.constant dense<5.000000e+01> : tensor<f32>
  %c2 = tg.constant dense<3.000000e+01> : tensor<f32>
  %divided = tg.div %s, %c1 : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %t = tg.tanh %divided : tensor<1x2x4x4xf32>
  %capped = tg.mul %t, %c2 : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = tg.softmax %capped {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = tg.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// Left alone: a constant mask that is neither causal nor empty, and scores
// that something else also reads.
// CHECK-LABEL: func.func @other_mask(
// CHECK-NOT: tg.attention
// CHECK: tg.softmax
func.func @other_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = tg.matmul %q, %k {transpose_rhs = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %keep = tg.constant dense<[[[[true, true, false, false], [true, true, false, false], [false, false, true, true], [false, false, true, true]]]]> : tensor<1x1x4x4xi1>
  %lowest = tg.constant dense<-3.40282347E+38> : tensor<f32>
  %masked = tg.where %keep, %s, %lowest : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = tg.softmax %masked {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = tg.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// A mask over the queries ([B, 1, T, 1]) is not a key mask: left alone.
// CHECK-LABEL: func.func @query_mask(
// CHECK-NOT: tg.attention
// CHECK: tg.softmax
func.func @query_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<1x4xi64>) -> tensor<1x2x4x8xf32> {
  %s = tg.matmul %q, %k {transpose_rhs = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %m4 = tg.reshape %mask : tensor<1x4xi64> -> tensor<1x1x4x1xi64>
  %mf = tg.cast %m4 : tensor<1x1x4x1xi64> -> tensor<1x1x4x1xf32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %hidden = tg.sub %one, %mf : (tensor<f32>, tensor<1x1x4x1xf32>) -> tensor<1x1x4x1xf32>
  %lowest = tg.constant dense<-3.40282347E+38> : tensor<f32>
  %bias = tg.mul %hidden, %lowest : (tensor<1x1x4x1xf32>, tensor<f32>) -> tensor<1x1x4x1xf32>
  %masked = tg.add %s, %bias : (tensor<1x2x4x4xf32>, tensor<1x1x4x1xf32>) -> tensor<1x2x4x4xf32>
  %p = tg.softmax %masked {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = tg.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// CHECK-LABEL: func.func @shared_scores(
// CHECK-NOT: tg.attention
// CHECK: tg.softmax
func.func @shared_scores(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %s = tg.matmul %q, %k {transpose_rhs = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
  %p = tg.softmax %s {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = tg.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o, %s : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// A loop of 3 trips calling @layer twice, for `orrery inspect --cost` (tests/integration/inspect_cli.sh):
// per run 6 dots (2 * 8 * 16 * 16 = 4096 FLOPs), 6 tanh (8 * 128 = 1024), 3 i32 adds, 4 compares,
// 2 adds of 8x16 f32 (128 each): 30,983 FLOPs in 21 kernels.
func.func private @layer(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %1 = stablehlo.tanh %0 : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}
func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<8x16xf32>
   cond {
    %c3 = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare  LT, %i, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %n = stablehlo.add %i, %c1 : tensor<i32>
    %y = func.call @layer(%v, %w) : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
    %z = func.call @layer(%y, %w) : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
    stablehlo.return %n, %z : tensor<i32>, tensor<8x16xf32>
  }
  %a = stablehlo.add %r#1, %r#1 : tensor<8x16xf32>
  %b = stablehlo.add %a, %a : tensor<8x16xf32>
  return %b : tensor<8x16xf32>
}

// error: 3:39: unbalanced '[': found '}' at line 5 before its ']'
func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = stablehlo.transpose %x, dims = [1, 0 : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

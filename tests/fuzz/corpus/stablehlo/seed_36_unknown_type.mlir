// error: 3:59: unknown element type 'f33'
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xf33>
  return %x : tensor<4xf32>
}

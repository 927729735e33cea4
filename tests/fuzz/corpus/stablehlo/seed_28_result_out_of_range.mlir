// error: 4:22: result number 2 of '%0' is out of range: it names 2 value(s)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0:2 = stablehlo.optimization_barrier %x, %x : tensor<4xf32>, tensor<4xf32>
  %1 = stablehlo.add %0#2, %x : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// error: 5:38: expected ')' to end the operand list, found end of file
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %x, %x : tensor<4xf32>
  %1 = stablehlo.multiply %0, %0 : tensor<4xf32>
  %2 = "stablehlo.dot_general"(%1, %0

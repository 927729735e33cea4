> : tensor<i32>
  %bound = stablehlo.constant dense<6> : tensor<i32>
  %step = stablehlo.constant dense<2> : tensor<i32>
  %0:2 = stablehlo.while(%i = %init, %v = %x) : tensor<i32>, tensor<f32>
   cond {
    %p = stablehlo.compare 
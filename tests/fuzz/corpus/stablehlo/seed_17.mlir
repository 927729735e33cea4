 : tensor<i32>
    %w = stablehlo.add %v, %x : tensor<f32>
    stablehlo.return %n, %w : tensor<i32>, tensor<f32>
  }
  return %0#1 : tensor<f32>
}

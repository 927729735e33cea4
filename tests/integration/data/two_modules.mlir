// Two modules for `orrery inspect`: a partitioned step with an all_reduce and a counted loop, and
// a module whose loop bound is an argument (trip count underivable).
module @step attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%x: tensor<1024xbf16>) -> tensor<1024xbf16> {
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<1024xbf16>
     cond {
      %c4 = stablehlo.constant dense<4> : tensor<i32>
      %p = stablehlo.compare  LT, %i, %c4 : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %c1 = stablehlo.constant dense<1> : tensor<i32>
      %n = stablehlo.add %i, %c1 : tensor<i32>
      %s = "stablehlo.all_reduce"(%v) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> ({
      ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
        %t = stablehlo.add %a, %b : tensor<bf16>
        stablehlo.return %t : tensor<bf16>
      }) : (tensor<1024xbf16>) -> tensor<1024xbf16>
      stablehlo.return %n, %s : tensor<i32>, tensor<1024xbf16>
    }
    return %0#1 : tensor<1024xbf16>
  }
}

// -----

func.func @open_ended(%limit: tensor<i32>) -> tensor<i32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %r = stablehlo.while(%i = %zero) : tensor<i32>
   cond {
    %p = stablehlo.compare  LT, %i, %limit : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %n = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %n : tensor<i32>
  }
  return %r : tensor<i32>
}

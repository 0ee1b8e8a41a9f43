# The headers of fused chains' generated kernels (fused.h), embedded in the
# plugin at build time so the compiler at run time (NVRTC, or the
# simulator's host compiler) gets exactly the text the eager kernels were
# built from, wherever the plugin is installed. Included by the plugin's and
# the simulator's CMakeLists; sets ${out_var} to the generated C file.
function(ptcu_embed_fused_sources out_var)
  set(root ${PROJECT_SOURCE_DIR})
  set(dir ${root}/backends/cuda)
  set(sources ${dir}/k_values.cuh ${dir}/k_reduce_acc.cuh ${dir}/fused_abi.h ${root}/include/portable/ew_math.h
              ${root}/include/portable/half.h ${root}/include/portable/numeric_rules.h ${dir}/fused_nvrtc_std.h)
  set(names k_values.cuh k_reduce_acc.cuh fused_abi.h portable/ew_math.h portable/half.h portable/numeric_rules.h fused_nvrtc_std.h)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/launch_fused_sources.c)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${out} "-DSOURCES=${sources}" "-DNAMES=${names}" -DPREFIX=ptcu
            -DINCLUDE=fused.h -P ${root}/backends/opencl/embed_sources.cmake
    DEPENDS ${sources} ${root}/backends/opencl/embed_sources.cmake
    COMMENT "Embedding the headers of fused chains' kernels"
    VERBATIM)
  set(${out_var} ${out} PARENT_SCOPE)
endfunction()

# Vitis HLS C simulation and synthesis of sample_kernel, run from hls/:
#   vitis_hls -f vitis_hls.tcl
# csim runs the same testbench as `make -C hls csim`; csynth reports the
# II of the fetch/draw/slots loops and the resources (see docs/KERNEL.md).
# The part is the SmartSSD's Kintex UltraScale+ KU15P.
open_project -reset build/vitis_hls
set_top sample_kernel
add_files sample_kernel.cpp
add_files -tb sample_kernel_tb.cpp
open_solution -reset smartssd -flow_target vitis
set_part xcku15p-ffva1156-2LV-e
create_clock -period 3.333 -name default
csim_design -argv [file normalize testdata/golden_kernel.bin]
csynth_design
exit

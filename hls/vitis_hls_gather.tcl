# Vitis HLS C simulation and synthesis of gather_kernel (the random-read
# sampler's gather, docs/KERNEL.md), run from hls/:
#   vitis_hls -f vitis_hls_gather.tcl
# csim runs the same testbench as `make -C hls csim`. Not run here: Vitis
# is not installed on the machines this repository is tested on.
open_project -reset build/vitis_hls_gather
set_top gather_kernel
add_files gather_kernel.cpp
add_files -tb gather_kernel_tb.cpp
open_solution -reset smartssd -flow_target vitis
set_part xcku15p-ffva1156-2LV-e
create_clock -period 3.333 -name default
csim_design
csynth_design
exit

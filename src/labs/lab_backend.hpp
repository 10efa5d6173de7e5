// lab_backend.hpp — the seam through which a student's collective runs inside the real program:
// `--comm lab-naive` (lab 02) and `--comm lab-ring` (lab 03), in train, bench ddp, bench
// collectives and every other command that takes --comm.
//
// Every fp32 SUM all-reduce on host memory (all gradient traffic of every strategy; bench
// collectives' fp32 all-reduces) runs the lab's function, in place on the result buffer. Everything
// else — the other collectives, fp64 and integer all-reduces (the trainer's loss and numerics sums),
// max/min — runs the production hand-rolled algorithms, so a lab only has to write the one function
// it teaches and the program around it still works. The backend is described as the algorithm the
// lab implements (naive or ring), so `analyze` models it as such.
#pragma once

#include <mpi.h>

#include <memory>

#include "comm/backend.hpp"
#include "comm/backend_description.hpp"
#include "comm/comm_config.hpp"

namespace microddp::labs {

// For comm::set_lab_backend_maker (the program installs it; comm/factory.hpp).
std::unique_ptr<comm::HostBackend> make_lab_backend(MPI_Comm parent, const comm::BackendDescription& description,
                                                    const comm::CommConfig& config);

}  // namespace microddp::labs

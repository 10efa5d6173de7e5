// lab_hier.hpp — the seam through which a student's hierarchical all-reduce (lab 11,
// docs/labs/11-hierarchical) runs inside the real program: `--comm lab-hier`, in train, bench
// collectives, bench ddp and every other command that takes --comm.
//
// The backend is production `hier` (hier_backend.hpp) with one collective replaced: every fp32 SUM
// all-reduce on host memory (all gradient traffic of every strategy; bench collectives' fp32
// all-reduces; Mean arrives here as Sum, HostBackend::run scales it) runs the student's
// hierarchical_all_reduce, in place on the result buffer, over a LabComm. Everything else — the
// other collectives, fp64 and integer all-reduces (the trainer's loss and numerics sums), max/min —
// runs production `hier`. The nodes the student is given are the ones production found
// (MPI_COMM_TYPE_SHARED, or MICRODDP_HIER_NODE_SIZES), so `MICRODDP_HIER_NODE_SIZES=2 mpirun -np 4`
// emulates two nodes of two ranks on one machine for both. The row describes the backend as the
// hierarchical all-reduce, as `hier`'s, so `analyze` models it as such. Host buffers only.
#pragma once

#include "comm/algorithms/hier_topology.hpp"
#include "labs/lab_api.hpp"

namespace microddp::labs {

// The student's view of a topology: node i's world ranks in local-rank order.
LabNodes lab_nodes(const comm::HierTopology& topology);

// Adds the row lab-hier to the backend table; later calls do nothing.
void register_lab_hier_backend();

}  // namespace microddp::labs

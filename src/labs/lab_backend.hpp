// lab_backend.hpp — the seam through which a student's collective runs inside the real program:
// `--comm lab-naive` (lab 02), `--comm lab-ring` (lab 03) and `--comm lab-sync` (lab 07), in train,
// bench ddp, bench collectives and every other command that takes --comm.
//
// lab-naive, lab-ring: every fp32 SUM all-reduce on host memory (all gradient traffic of every strategy; bench
// collectives' fp32 all-reduces) runs the lab's function, in place on the result buffer. Everything
// else — the other collectives, fp64 and integer all-reduces (the trainer's loss and numerics sums),
// max/min — runs the production hand-rolled algorithms, so a lab only has to write the one function
// it teaches and the program around it still works. The backend is described as the algorithm the
// lab implements (naive or ring), so `analyze` models it as such.
//
// `--comm lab-sync` (lab 07) is the other way round: broadcasts, gathers and barriers on host
// memory run the student's binomial_broadcast, linear_gather and dissemination_barrier (any dtype
// whose blocks are whole 4-byte words, moved as floats; other dtypes and device buffers: production),
// and every all-reduce runs the production ring. In train that is the initial parameter broadcast
// from rank 0 and, with --trace, the barrier and the gather of every rank's events to rank 0. Its
// own backend rather than lab-naive/lab-ring doing it too, so each lab runs without the others done.
//
// The three are rows of the backend table (comm/factory.hpp), registered by register_lab_backends
// (the program: at start-up, register_labs.hpp). lab-naive and lab-ring are described as the
// algorithm they implement, lab-sync as the ring its all-reduces run.
#pragma once

namespace microddp::comm {
struct CollectiveCall;
}

namespace microddp::labs {

// Adds the rows lab-naive, lab-ring and lab-sync to the backend table; later calls do nothing.
void register_lab_backends();

// What a lab all-reduce takes: an fp32 SUM all-reduce on host memory. For such a call, returns its
// result buffer holding this rank's input (copied there when the call is out of place: the lab
// functions work in place); nullptr for every other call, which production runs (lab-hier too).
float* lab_all_reduce_buffer(const comm::CollectiveCall& call);

}  // namespace microddp::labs

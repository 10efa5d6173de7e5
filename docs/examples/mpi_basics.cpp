// mpi_basics.cpp — ranks, a message around the ring, and one all-reduce.
#include <mpi.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);  // who am I: 0 .. size-1
  MPI_Comm_size(MPI_COMM_WORLD, &size);  // how many of us

  // Point to point: send my rank to the right neighbour, receive from the left one. Sendrecv
  // posts both at once, so the ring cannot deadlock (n blocking Sends first could).
  const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
  int from_left = -1;
  MPI_Sendrecv(&rank, 1, MPI_INT, right, /*tag=*/0, &from_left, 1, MPI_INT, left, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);

  // A collective: every rank contributes a vector, every rank gets the element-wise sum.
  std::vector<float> grad = {1.0f * rank, 10.0f};
  MPI_Allreduce(MPI_IN_PLACE, grad.data(), 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);

  std::printf("rank %d of %d: got %d from rank %d; all-reduced {%g, %g}\n", rank, size, from_left, left,
              grad[0], grad[1]);
  MPI_Finalize();
  return 0;
}

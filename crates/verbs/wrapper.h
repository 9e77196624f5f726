/* Input for bindgen (see gen-bindings.sh): the two rdma-core headers rpcrdma-verbs binds. */
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

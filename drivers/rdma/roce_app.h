/*
 * roce_app.h - what the appliance's own verbs applications (the rping and ibv_rc_pingpong
 * servers, later the NVMe/RDMA target) hold per connection, and its release.
 */
#ifndef DRIVERS_RDMA_ROCE_APP_H
#define DRIVERS_RDMA_ROCE_APP_H

#include <stdint.h>
#include "roce_verbs.h"

/* One CQ, one RC QP, one MR over heap memory (mem, from calloc). */
struct roce_conn_res {
	struct roce_cq *cq;
	struct roce_qp *qp;
	struct roce_mr *mr;
	uint8_t *mem;
};

/* Release what r holds (the QP moved to ERR and its completions drained first) and zero it. */
void roce_conn_res_free(struct roce_conn_res *r);

#endif

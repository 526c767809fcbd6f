/*
 * fake_nvmet_transport.h - a transport for the target core's host tests and fuzzer:
 * connections are plain structs, capsules are built in memory, data lives in host
 * buffers split into several segments (to exercise scatter lists), completions are
 * recorded and counted (every command must complete exactly once).
 */
#ifndef TESTS_FAKE_NVMET_TRANSPORT_H
#define TESTS_FAKE_NVMET_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>
#include "drivers/nvme/target/nvmet.h"
#include "drivers/nvme/target/nvmet_config.h"
#include "drivers/nvme/target/nvmet_wire.h"

#define FT_MAX_CMDS 8
#define FT_BUF 8192
#define FT_SEGS 3

struct ft_cmd {
	struct nvmet_req req;
	struct nvme_sg sg[FT_SEGS];
	uint8_t buf[FT_BUF];
	unsigned completions;    /* must end at exactly 1 */
	bool busy;
	struct ft_conn *conn;
};

struct ft_conn {
	struct nvmet_queue *q;
	bool killed;
	int kill_reason;
	unsigned kills;
	uint64_t completions;
	bool close_in_done;      /* a completion finds the peer gone: the transport destroys the
				  * queue inside its done callback (re-entrant teardown) */
	struct ft_cmd cmds[FT_MAX_CMDS];
};

extern const struct nvmet_transport_ops ft_ops;

/* Open a connection on port index port. */
void ft_open(struct ft_conn *c, unsigned port);
/* The transport closes it (nvmet_queue_destroy), then the due timers run as the poll
 * loop would run them (a controller whose last queue went is freed there). */
void ft_close(struct ft_conn *c);

/* The namespace hint ft_submit() passes the core with each command (struct nvmet_data.bdev):
 * FT_HINT_NONE (as the RDMA transport), FT_HINT_SHAPE (nvmet_req_shape()'s answer, as the
 * TCP transport) or FT_HINT_FORCED (ft_hint_bdev, right or wrong). */
enum ft_hint { FT_HINT_NONE = 0, FT_HINT_SHAPE, FT_HINT_FORCED };
extern enum ft_hint ft_hint;
extern const struct nvmet_bdev *ft_hint_bdev;
/* true: ft_submit tells the core its segments add up to the length (nvmet_data.summed, as
 * nvmet-tcp does; they always do here) */
extern bool ft_summed;

/* Start a command in slot `slot` with len data bytes (copied from data when non-NULL,
 * else zeroes) split over up to FT_SEGS segments; returns the slot's cmd. */
struct ft_cmd *ft_submit(struct ft_conn *c, unsigned slot, const struct nvme_sqe *sqe, const void *data,
			 uint32_t len);

/* Run one command synchronously and return its CQE status field >> 1 (SCT << 8 | SC);
 * *cqe_out gets the CQE, the data read (when rbuf) is copied to rbuf. */
uint16_t ft_exec(struct ft_conn *c, const struct nvme_sqe *sqe, const void *wdata, uint32_t len, void *rbuf,
		 struct nvme_cqe *cqe_out);

/* SQE builders (SGL PSDT, CID). */
struct nvme_sqe ft_sqe(uint8_t opc, uint16_t cid, uint32_t nsid, uint32_t len);
struct nvme_sqe ft_connect_sqe(uint16_t qid, uint16_t sqsize, uint32_t kato);
void ft_connect_data(uint8_t cd[1024], const char *hostnqn, const char *subnqn, uint16_t cntlid);
struct nvme_sqe ft_prop_sqe(bool set, bool size8, uint32_t off, uint64_t value);

/* Connect an admin queue and enable the controller (CC.EN=1): returns the cntlid or -status. */
int ft_connect_admin(struct ft_conn *c, const char *hostnqn, const char *subnqn, uint32_t kato);
int ft_enable(struct ft_conn *c);
uint16_t ft_connect_io(struct ft_conn *c, uint16_t qid, uint16_t cntlid, const char *hostnqn, const char *subnqn);

/* A RAM disk of 4096 blocks of 512 bytes for every namespace (an nvmet_bdev_open_fn). */
int ft_ram_open(void *ctx, unsigned si, const struct nvmet_cfg_ns *ns, struct nvmet_bdev *out);

/* The default timer queue reset, json parsed into cfg and the target started on it with
 * open_fn: 0, or the failing step's rc (err says why a parse failed). */
int ft_target_start(const char *json, struct nvmet_config *cfg, nvmet_bdev_open_fn open_fn, char *err, size_t cap);

#endif

/*
 * netdelay.c - a delay line between two TUN devices: every IP packet read
 * from one is written to the other once a fixed time has passed since it
 * arrived.  With one device in a network namespace and the other in the
 * host's (`scripts/rados-cluster.sh start DIR --rtt-ms=R` sets them up, with
 * the cluster in the namespace), every round trip between the
 * two sides is at least 2 x DELAY longer than loopback's: a stand-in for
 * `tc qdisc ... netem delay` on a kernel without sch_netem, so that RADOS
 * commits can be counted in round trips of a real network (BENCH.md §3.5).
 *
 *   mrtx-netdelay NAME-A NAME-B DELAY-US [READY-FILE]
 *
 * Creates TUN devices NAME-A and NAME-B (IFF_TUN, no packet information:
 * each read is one IP packet), writes READY-FILE (when given) once both
 * exist, then forwards until SIGTERM or SIGINT; the devices vanish with
 * the process, and it ends with an error (exit 1) when either device goes
 * away under it (its namespace deleted).  Packets of one direction leave in
 * the order they came: the
 * delay is the same for all, so each direction is one FIFO.  Nothing is
 * dropped while the FIFO has room (QCAP packets a direction); past it the
 * packet is dropped and counted, as a full queue of a real link would.
 * On exit it prints one line: packets forwarded and dropped each way.
 *
 * Why not a userspace TCP proxy: Ceph clients connect to the addresses the
 * OSD map advertises, so only a hop at the IP layer delays every
 * connection without changing the cluster's addresses.  Needs root (or
 * CAP_NET_ADMIN) and /dev/net/tun.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* ppoll */
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define MTU 65536  /* a TUN read returns one packet, at most this long */
#define QCAP 4096  /* packets held a direction */

typedef struct {
	uint64_t due; /* ns, CLOCK_MONOTONIC */
	size_t len;
	unsigned char *data;
} pkt;

typedef struct {
	int in, out;    /* read from in, write to out */
	pkt q[QCAP];    /* ring: head .. head + n - 1 */
	size_t head, n;
	unsigned long long sent, dropped;
} dir;

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int tun_open(const char *name)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "mrtx-netdelay: cannot open /dev/net/tun: %s\n", strerror(errno));
		return -1;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	if (strlen(name) >= sizeof(ifr.ifr_name)) {
		fprintf(stderr, "mrtx-netdelay: device name too long: %s\n", name);
		close(fd);
		return -1;
	}
	memcpy(ifr.ifr_name, name, strlen(name) + 1);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		fprintf(stderr, "mrtx-netdelay: cannot create TUN device %s: %s\n", name,
		        strerror(errno));
		close(fd);
		return -1;
	}
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		fprintf(stderr, "mrtx-netdelay: %s: %s\n", name, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Read every packet waiting on d->in into d's FIFO, due at now + delay. */
static int take(dir *d, uint64_t delay, unsigned char *buf)
{
	for (;;) {
		ssize_t r = read(d->in, buf, MTU);
		pkt *p;

		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			fprintf(stderr, "mrtx-netdelay: read: %s\n", strerror(errno));
			return -1;
		}
		if (d->n == QCAP) {
			d->dropped++;
			continue;
		}
		p = &d->q[(d->head + d->n) % QCAP];
		if (!(p->data = malloc((size_t)r))) {
			d->dropped++;
			continue;
		}
		memcpy(p->data, buf, (size_t)r);
		p->len = (size_t)r;
		p->due = now_ns() + delay;
		d->n++;
	}
}

/* Write every packet of d that is due; the time the next one is due (or 0). */
static uint64_t give(dir *d)
{
	uint64_t t = now_ns();

	while (d->n && d->q[d->head].due <= t) {
		pkt *p = &d->q[d->head];

		/* (a TUN write takes the whole packet or fails: a failure is a
		 * packet lost, which TCP above recovers) */
		if (write(d->out, p->data, p->len) == (ssize_t)p->len)
			d->sent++;
		else
			d->dropped++;
		free(p->data);
		d->head = (d->head + 1) % QCAP;
		d->n--;
	}
	return d->n ? d->q[d->head].due : 0;
}

int main(int argc, char **argv)
{
	static dir ab, ba;
	static unsigned char buf[MTU];
	struct sigaction sa;
	sigset_t block, open_mask;
	uint64_t delay;
	char *end;
	int a, b;

	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: mrtx-netdelay NAME-A NAME-B DELAY-US [READY-FILE]\n");
		return 2;
	}
	errno = 0;
	delay = strtoull(argv[3], &end, 10);
	if (errno || end == argv[3] || *end || delay > 10000000u) {
		fprintf(stderr, "mrtx-netdelay: DELAY-US must be microseconds, 0..10000000: %s\n",
		        argv[3]);
		return 2;
	}
	delay *= 1000u;
	if ((a = tun_open(argv[1])) < 0)
		return 1;
	if ((b = tun_open(argv[2])) < 0)
		return 1;
	/* SIGTERM and SIGINT stay blocked except inside ppoll, so one that
	 * arrives while packets are moved ends the next wait at once instead of
	 * being missed until the next packet (after a cluster's stop there is
	 * none) */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &open_mask);
	sigdelset(&open_mask, SIGTERM);
	sigdelset(&open_mask, SIGINT);
	if (argc == 5) {
		FILE *f = fopen(argv[4], "w");

		if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f)) {
			fprintf(stderr, "mrtx-netdelay: cannot write %s\n", argv[4]);
			return 1;
		}
	}
	ab = (dir){ .in = a, .out = b };
	ba = (dir){ .in = b, .out = a };
	while (!stop) {
		struct pollfd pf[2] = { { a, POLLIN, 0 }, { b, POLLIN, 0 } };
		uint64_t next = 0, d1 = give(&ab), d2 = give(&ba);
		struct timespec ts, *tp = NULL;

		next = d1 && d2 ? (d1 < d2 ? d1 : d2) : d1 ? d1 : d2;
		if (next) {
			uint64_t t = now_ns(), w = next > t ? next - t : 0;

			ts.tv_sec = (time_t)(w / 1000000000u);
			ts.tv_nsec = (long)(w % 1000000000u);
			tp = &ts;
		}
		if (ppoll(pf, 2, tp, &open_mask) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "mrtx-netdelay: poll: %s\n", strerror(errno));
			return 1;
		}
		for (int i = 0; i < 2; i++)
			if (pf[i].revents & (POLLERR | POLLHUP | POLLNVAL)) {
				fprintf(stderr, "mrtx-netdelay: device %s went away\n", argv[1 + i]);
				return 1;
			}
		if ((pf[0].revents & POLLIN) && take(&ab, delay, buf))
			return 1;
		if ((pf[1].revents & POLLIN) && take(&ba, delay, buf))
			return 1;
	}
	printf("mrtx-netdelay: %s->%s %llu sent %llu dropped, %s->%s %llu sent %llu dropped\n",
	       argv[1], argv[2], ab.sent, ab.dropped, argv[2], argv[1], ba.sent, ba.dropped);
	return 0;
}

/*
 * client.c: the C-only library's side of the per-host daemon
 * (docs/daemon.md): finding or starting the fabric's daemon, the
 * session and its connections, one request at a time on each, and fork.
 *
 * A process has one session with the daemon, made by its first
 * connection (NICD_HELLO); every other thread in a request at the same
 * time uses a connection of its own (NICD_JOIN), taken from a pool, so
 * that a thread waiting in the daemon (a destroy waiting for
 * acknowledgements) never holds up another. When the process exits or
 * dies the kernel closes the connections and the daemon destroys what it
 * left. A child of fork() starts a session of its own at its first verb;
 * the parent's objects are not its (EINVAL), as ibv_fork_init(3) says.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

extern char **environ;

struct lane {
	int fd;
	struct lane *next; /* in cl_free */
	struct lane *all;  /* in cl_all */
};

static pthread_mutex_t cl_mu = PTHREAD_MUTEX_INITIALIZER;
static int cl_up;	/* the session is open */
static int cl_dead;	/* the daemon went away: every verb is EIO */
static uint64_t cl_session, cl_token;
static struct lane *cl_free;	/* idle connections, the first one among them */
static struct lane *cl_all;	/* every connection, busy or idle */
static int cl_first = -1;	/* the first connection: the session's life */
static unsigned cl_epoch = 1;	/* bumped in a child of fork */
static char cl_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static char cl_fabric[72];
static int cl_private;	/* VERBSIM_FABRIC=none: a daemon of this process's own */

/* The daemon's status page (struct nicd_status), mapped at NICD_HELLO. */
static struct nicd_status *cl_stat;

/* What the daemon reads at NICD_HELLO to prove it reaches our memory. */
static const uint8_t probe_magic[16] = "verbsim nicd ok";

unsigned nicd_epoch(void) { return cl_epoch; }

int nicd_dead(void) { return __atomic_load_n(&cl_dead, __ATOMIC_ACQUIRE); }

/* ---- fork ----------------------------------------------------------- */

static void at_prepare(void) { pthread_mutex_lock(&cl_mu); }
static void at_parent(void) { pthread_mutex_unlock(&cl_mu); }

/* The child has copies of the parent's connections, which must never carry
 * a request of the child: close them and start afresh. */
static void at_child(void)
{
	struct lane *l = cl_all;

	while (l) {
		struct lane *n = l->all;
		close(l->fd);
		free(l);
		l = n;
	}
	cl_all = NULL;
	cl_free = NULL;
	cl_first = -1;
	if (cl_stat)
		munmap(cl_stat, sizeof(*cl_stat));
	cl_stat = NULL;
	cl_up = 0;
	cl_dead = 0;
	cl_epoch++;
	pthread_mutex_init(&cl_mu, NULL);
}

__attribute__((constructor)) static void nicd_client_init(void) { pthread_atfork(at_prepare, at_parent, at_child); }

/* ---- finding the daemon --------------------------------------------- */

static void debugf(const char *fmt, const char *arg)
{
	if (getenv("VERBSIM_DEBUG")) {
		fprintf(stderr, "verbsim: ");
		fprintf(stderr, fmt, arg);
		fputc('\n', stderr);
	}
}

/* socket_dir writes the directory of the daemons' sockets (as
 * nicd.SocketDir does) and makes it, mode 0700. */
static int socket_dir(char *dir, size_t n)
{
	const char *d = getenv("VERBSIM_NICD_DIR");
	const char *x = getenv("XDG_RUNTIME_DIR");

	if (d && *d)
		snprintf(dir, n, "%s", d);
	else if (x && *x)
		snprintf(dir, n, "%s/verbsim", x);
	else
		snprintf(dir, n, "/tmp/verbsim-%u", (unsigned)getuid());
	if (mkdir(dir, 0700) && errno != EEXIST)
		return errno;
	return 0;
}

/* fabric_name reads VERBSIM_FABRIC as the daemon does: uid<uid> by
 * default; none is a fabric of this process alone. */
static int fabric_name(void)
{
	const char *f = getenv("VERBSIM_FABRIC");

	cl_private = 0;
	if (!f || !*f) {
		snprintf(cl_fabric, sizeof(cl_fabric), "uid%u", (unsigned)getuid());
		return 0;
	}
	if (!strcmp(f, "none")) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(cl_fabric, sizeof(cl_fabric), "private-%d-%lx", (int)getpid(), (unsigned long)ts.tv_nsec);
		cl_private = 1;
		return 0;
	}
	if (strlen(f) > 64 || strchr(f, '/')) {
		fprintf(stderr, "verbsim: VERBSIM_FABRIC=\"%s\": want 1 to 64 printable characters other than '/'\n", f);
		return ENODEV;
	}
	snprintf(cl_fabric, sizeof(cl_fabric), "%s", f);
	return 0;
}

/* daemon_path finds the verbsim binary: $VERBSIM_DAEMON, else the one
 * beside this library, else the first on $PATH. */
static int daemon_path(char *out, size_t n)
{
	const char *e = getenv("VERBSIM_DAEMON");
	Dl_info info;

	if (e && *e) {
		snprintf(out, n, "%s", e);
		return access(out, X_OK) ? errno : 0;
	}
	if (dladdr((void *)daemon_path, &info) && info.dli_fname) {
		const char *slash = strrchr(info.dli_fname, '/');

		if (slash) {
			snprintf(out, n, "%.*s/verbsim", (int)(slash - info.dli_fname), info.dli_fname);
			if (!access(out, X_OK))
				return 0;
		}
	}
	const char *path = getenv("PATH");
	while (path && *path) {
		const char *c = strchr(path, ':');
		size_t l = c ? (size_t)(c - path) : strlen(path);

		snprintf(out, n, "%.*s/verbsim", (int)l, path);
		if (l && !access(out, X_OK))
			return 0;
		path = c ? c + 1 : NULL;
	}
	return ENOENT;
}

static int dial(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	memcpy(a.sun_path, cl_path, sizeof(a.sun_path));
	while (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		int e = errno;

		if (e == EINTR)
			continue;
		close(fd);
		return -e;
	}
	return fd;
}

/* start_daemon runs `verbsim nicd -detach`, which returns once the daemon
 * listens. */
static int start_daemon(const char *dir)
{
	char exe[PATH_MAX];
	char *argv[12];
	pid_t pid;
	int rc, st, i = 0;

	rc = daemon_path(exe, sizeof(exe));
	if (rc) {
		fprintf(stderr, "verbsim: no verbsim binary to start the fabric's daemon with: set VERBSIM_DAEMON, "
				"put verbsim beside libibverbs.so.1 or on PATH (docs/daemon.md)\n");
		return ENODEV;
	}
	argv[i++] = exe;
	argv[i++] = "nicd";
	argv[i++] = "-detach";
	argv[i++] = "-fabric";
	argv[i++] = cl_fabric;
	argv[i++] = "-dir";
	argv[i++] = (char *)dir;
	if (cl_private)
		argv[i++] = "-linger=0s";
	argv[i] = NULL;
	debugf("starting %s", exe);
	rc = posix_spawn(&pid, exe, NULL, NULL, argv, environ);
	if (rc)
		return rc;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return 0; /* reaped by the program's own handler: try to connect */
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return ENODEV;
	return 0;
}

/* connect_or_start connects to the fabric's daemon, starting it when
 * nobody listens, under a lock so that two processes starting at once
 * start one daemon. */
static int connect_or_start(void)
{
	char dir[PATH_MAX - 80], lock[PATH_MAX];
	int fd, lk, rc;

	rc = socket_dir(dir, sizeof(dir));
	if (rc)
		return rc;
	if ((size_t)snprintf(cl_path, sizeof(cl_path), "%s/%s.sock", dir, cl_fabric) >= sizeof(cl_path))
		return ENAMETOOLONG;
	fd = dial();
	if (fd >= 0)
		return fd;
	snprintf(lock, sizeof(lock), "%s/%s.lock", dir, cl_fabric);
	lk = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lk < 0)
		return -errno;
	while (flock(lk, LOCK_EX) && errno == EINTR)
		;
	fd = dial();
	if (fd < 0) {
		rc = start_daemon(dir);
		for (int i = 0; fd < 0 && !rc && i < 500; i++) { /* a daemon we could not wait for */
			fd = dial();
			if (fd < 0)
				usleep(10000);
		}
		if (rc)
			fd = -rc;
	}
	flock(lk, LOCK_UN);
	close(lk);
	if (cl_private && fd >= 0)
		unlink(lock);
	return fd;
}

/* ---- requests -------------------------------------------------------- */

static int send_req(int fd, const struct nicd_req *q, const void *body, size_t blen, const int *fds, int nfds)
{
	struct iovec iov[2] = { { (void *)q, sizeof(*q) }, { (void *)body, blen } };
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} c;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = blen ? 2 : 1 };

	if (nfds > 0) {
		struct cmsghdr *h;

		memset(&c, 0, sizeof(c));
		m.msg_control = c.buf;
		m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		h = CMSG_FIRSTHDR(&m);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(h), fds, nfds * sizeof(int));
	}
	while (sendmsg(fd, &m, MSG_NOSIGNAL) < 0) {
		if (errno != EINTR)
			return errno;
	}
	return 0;
}

/* recv_rep reads a reply; with rfd set, a descriptor that came with it
 * (-1 for none). */
static int recv_rep_fd(int fd, struct nicd_rep *p, void *out, size_t cap, int *rfd)
{
	struct iovec iov[2] = { { p, sizeof(*p) }, { out, cap } };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = cap ? 2 : 1 };
	ssize_t n;

	if (rfd) {
		*rfd = -1;
		m.msg_control = c.buf;
		m.msg_controllen = sizeof(c.buf);
	}
	while ((n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC)) < 0) {
		if (errno != EINTR)
			return errno;
	}
	if (rfd && m.msg_controllen) {
		struct cmsghdr *h = CMSG_FIRSTHDR(&m);

		if (h && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS && h->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(rfd, CMSG_DATA(h), sizeof(int));
	}
	if (n == 0)
		return ECONNRESET;
	if ((size_t)n < sizeof(*p) || (m.msg_flags & MSG_TRUNC) || (size_t)n != sizeof(*p) + p->len)
		return EPROTO;
	return 0;
}

static int recv_rep(int fd, struct nicd_rep *p, void *out, size_t cap) { return recv_rep_fd(fd, p, out, cap, NULL); }

static int exchange(int fd, const struct nicd_req *q, const void *body, size_t blen, const int *fds, int nfds,
		    struct nicd_rep *p, void *out, size_t cap)
{
	int rc = send_req(fd, q, body, blen, fds, nfds);

	return rc ? rc : recv_rep(fd, p, out, cap);
}

/* The daemon is gone: say so once, and fail every verb from now on. */
static void lost(int why)
{
	static int told;

	__atomic_store_n(&cl_dead, 1, __ATOMIC_RELEASE);
	if (!told) {
		told = 1;
		fprintf(stderr, "verbsim: the fabric's daemon is gone (%s): verbs fail with EIO\n", strerror(why));
	}
}

/* hello opens the session on fd. */
static int hello(int fd)
{
	struct nicd_hello h = { .version = NICD_VERSION, .pid = (uint32_t)getpid(), .probe = (uintptr_t)probe_magic };
	struct nicd_req q = { .op = NICD_HELLO, .len = sizeof(h) };
	struct nicd_rep p;
	struct ucred cr;
	socklen_t l = sizeof(cr);
	int rc;

	memcpy(h.magic, probe_magic, sizeof(h.magic));
	snprintf(h.fabric, sizeof(h.fabric), "%s", cl_fabric);
	/* Under Yama's ptrace_scope 1 only a ptracer we name may read our
	 * memory: the daemon, whose pid the socket tells. */
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l))
		prctl(PR_SET_PTRACER, (unsigned long)cr.pid, 0, 0, 0);
	int sfd;

	rc = send_req(fd, &q, &h, sizeof(h), NULL, 0);
	if (!rc)
		rc = recv_rep_fd(fd, &p, NULL, 0, &sfd);
	if (rc)
		return rc;
	if (sfd >= 0) {
		void *m = mmap(NULL, sizeof(*cl_stat), PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);

		close(sfd);
		if (m != MAP_FAILED)
			cl_stat = m;
	}
	if (p.err == EPERM)
		fprintf(stderr, "verbsim: the fabric's daemon cannot read this process's memory (process_vm_readv): "
				"see docs/daemon.md, \"Who may join\"\n");
	if (p.err)
		return p.err;
	cl_session = p.v;
	cl_token = p.w;
	/* VERBSIM_DIE_AFTER: a fault for testing dead peers (NICD_DIE_AFTER). */
	const char *die = getenv("VERBSIM_DIE_AFTER");
	if (die && *die) {
		char *end;
		unsigned long long n = strtoull(die, &end, 10);
		struct nicd_req d = { .op = NICD_DIE_AFTER, .a = n };

		if (*end || !n) {
			fprintf(stderr, "verbsim: VERBSIM_DIE_AFTER=\"%s\": want a positive number of packets\n", die);
			return ENODEV;
		}
		rc = exchange(fd, &d, NULL, 0, NULL, 0, &p, NULL, 0);
		if (rc || p.err)
			return rc ? rc : p.err;
		fprintf(stderr, "verbsim: VERBSIM_DIE_AFTER=%llu: the daemon kills this process at that packet\n", n);
	}
	return 0;
}

int nicd_connect(void)
{
	int rc = 0, fd;

	pthread_mutex_lock(&cl_mu);
	if (cl_up)
		goto out;
	if (cl_dead) {
		rc = EIO;
		goto out;
	}
	rc = fabric_name();
	if (rc)
		goto out;
	for (int tries = 0; tries < 3; tries++) {
		fd = connect_or_start();
		if (fd < 0) {
			rc = -fd;
			break;
		}
		rc = hello(fd);
		if (rc == ECONNRESET || rc == EPIPE) {
			/* A daemon that was leaving as we came: start another. */
			close(fd);
			continue;
		}
		if (rc) {
			close(fd);
			break;
		}
		struct lane *l = malloc(sizeof(*l));
		if (!l) {
			close(fd);
			rc = ENOMEM;
			break;
		}
		l->fd = fd;
		l->next = NULL;
		l->all = NULL;
		cl_free = l;
		cl_all = l;
		cl_first = fd;
		cl_up = 1;
		break;
	}
	if (rc)
		debugf("no daemon: %s", strerror(rc));
out:
	pthread_mutex_unlock(&cl_mu);
	return rc;
}

/* take returns an idle connection of the session, or a new one. */
static struct lane *take(int *rc)
{
	struct lane *l;
	struct nicd_req q = { .op = NICD_JOIN };
	struct nicd_rep p;
	int fd;

	pthread_mutex_lock(&cl_mu);
	if (!cl_up && !cl_dead) {
		/* A child of fork, whose first verb opens its own session. */
		pthread_mutex_unlock(&cl_mu);
		*rc = nicd_connect();
		if (*rc)
			return NULL;
		pthread_mutex_lock(&cl_mu);
	}
	if (!cl_up || cl_dead) {
		pthread_mutex_unlock(&cl_mu);
		*rc = cl_dead ? EIO : ENODEV;
		return NULL;
	}
	l = cl_free;
	if (l) {
		cl_free = l->next;
		pthread_mutex_unlock(&cl_mu);
		return l;
	}
	q.a = cl_session;
	q.b = cl_token;
	pthread_mutex_unlock(&cl_mu);
	fd = dial();
	if (fd < 0) {
		lost(-fd);
		*rc = EIO;
		return NULL;
	}
	*rc = exchange(fd, &q, NULL, 0, NULL, 0, &p, NULL, 0);
	if (*rc || p.err) {
		close(fd);
		if (!*rc)
			*rc = p.err;
		lost(*rc);
		*rc = EIO;
		return NULL;
	}
	l = malloc(sizeof(*l));
	if (!l) {
		close(fd);
		*rc = ENOMEM;
		return NULL;
	}
	l->fd = fd;
	pthread_mutex_lock(&cl_mu);
	l->all = cl_all;
	cl_all = l;
	pthread_mutex_unlock(&cl_mu);
	return l;
}

static void give(struct lane *l, unsigned epoch)
{
	pthread_mutex_lock(&cl_mu);
	if (epoch != cl_epoch) { /* forked meanwhile: not ours */
		pthread_mutex_unlock(&cl_mu);
		return;
	}
	l->next = cl_free;
	cl_free = l;
	pthread_mutex_unlock(&cl_mu);
}

int nicd_call_fds(uint32_t op, uint64_t obj, uint64_t a, uint64_t b, const void *body, size_t blen, const int *fds,
		  int nfds, struct nicd_rep *p, void *out, size_t cap)
{
	struct nicd_req q = { .op = op, .len = (uint32_t)blen, .obj = obj, .a = a, .b = b };
	unsigned epoch = cl_epoch;
	struct lane *l;
	int rc;

	memset(p, 0, sizeof(*p));
	if (blen + sizeof(q) > NICD_MAX_MSG)
		return EINVAL;
	l = take(&rc);
	if (!l)
		return rc;
	if (cl_stat)
		__atomic_add_fetch(&cl_stat->busy, 1, __ATOMIC_RELEASE);
	rc = send_req(l->fd, &q, body, blen, fds, nfds);
	if (rc && cl_stat) /* never sent: the daemon will not take it off */
		__atomic_sub_fetch(&cl_stat->busy, 1, __ATOMIC_RELEASE);
	if (!rc)
		rc = recv_rep(l->fd, p, out, cap);
	if (rc == EPROTO) {
		/* A reply longer than the caller expected: the library and the
		 * daemon disagree, not a dead daemon. The connection still
		 * carries whole messages. */
		give(l, epoch);
		return EPROTO;
	}
	if (rc) {
		lost(rc); /* the connection stays out of the pool */
		return EIO;
	}
	give(l, epoch);
	return p->err;
}

int nicd_busy(void) { return cl_stat && __atomic_load_n(&cl_stat->busy, __ATOMIC_ACQUIRE); }

int nicd_call(uint32_t op, uint64_t obj, uint64_t a, uint64_t b, const void *body, size_t blen, struct nicd_rep *p,
	      void *out, size_t cap)
{
	return nicd_call_fds(op, obj, a, b, body, blen, NULL, 0, p, out, cap);
}

/* bench/splice_relay.c: configurations (e) and (f) of the benchmark, the
 * floors a byte-moving proxy can reach on this machine. A TCP relay with no
 * parsing, no limits and no TLS: one thread, one epoll instance
 * (edge-triggered). In its default mode, configuration (e), it never copies
 * a byte into user space: each direction of each connection is one pipe, and
 * bytes go socket -> pipe -> socket with splice(2). With --copy,
 * configuration (f), each direction is a 1 MiB user-space buffer filled by
 * read(2) and drained by write(2): the two copies (into and out of user
 * space) that any proxy which looks at the bytes pays, and nothing more. A
 * benchmark reference only: never part of epochgate, never run by the tests.
 *
 * usage: splice_relay [--copy] TARGET_HOST:PORT [TARGET_HOST:PORT ...]
 *   Listens on one ephemeral 127.0.0.1 port per target and relays every
 *   accepted connection to that target. When all listeners are bound it
 *   prints one line to stdout:
 *     splice-relay ready listen=127.0.0.1:P1,127.0.0.1:P2,... mode=splice|copy
 *   and runs until SIGTERM/SIGINT.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_TARGETS 16
#define PIPE_BYTES (1 << 20) /* fs.pipe-max-size's default; falls back to 64 KiB */

struct pair;

/* One socket of a relayed connection. */
struct end {
  struct pair *pair;
  int fd;
};

/* One direction: bytes read from `from` wait in the pipe (splice mode) or
 * in `buf` (copy mode) for `to`. */
struct flow {
  int pipe_r, pipe_w;
  size_t pending; /* bytes in the pipe, or in buf past `sent` */
  size_t capacity;
  char *buf;      /* copy mode only */
  size_t sent;    /* copy mode: bytes of buf already written */
};

static int copy_mode;

struct pair {
  struct end client, upstream;
  struct flow up;   /* client -> upstream */
  struct flow down; /* upstream -> client */
  int dead;
  struct pair *next_dead;
};

struct listener {
  int fd;
  struct sockaddr_in target;
};

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) { (void)sig; stop_requested = 1; }

static int set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static void set_nodelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static int open_flow(struct flow *f) {
  if (copy_mode) {
    f->pipe_r = f->pipe_w = -1;
    f->pending = f->sent = 0;
    f->capacity = PIPE_BYTES;
    f->buf = malloc(PIPE_BYTES);
    return f->buf != NULL ? 0 : -1;
  }
  int p[2];
  if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) return -1;
  f->pipe_r = p[0];
  f->pipe_w = p[1];
  f->pending = 0;
  const int got = fcntl(p[1], F_SETPIPE_SZ, PIPE_BYTES);
  f->capacity = got > 0 ? (size_t)got : 65536;
  return 0;
}

/* Moves what `from` has to `to` through the flow's pipe until one side would
 * block. Returns 0 to keep going, -1 when the pair must close (EOF or error). */
static int pump_copy(int from, int to, struct flow *f) {
  for (;;) {
    while (f->pending > 0) {
      const ssize_t n = write(to, f->buf + f->sent, f->pending);
      if (n < 0) return errno == EAGAIN ? 0 : -1; /* wait for EPOLLOUT on `to` */
      f->sent += (size_t)n;
      f->pending -= (size_t)n;
    }
    f->sent = 0;
    const ssize_t n = read(from, f->buf, f->capacity);
    if (n == 0) return -1;                       /* peer closed */
    if (n < 0) return errno == EAGAIN ? 0 : -1;  /* wait for EPOLLIN on `from` */
    f->pending = (size_t)n;
  }
}

static int pump(int from, int to, struct flow *f) {
  if (copy_mode) return pump_copy(from, to, f);
  for (;;) {
    while (f->pending > 0) {
      const ssize_t n = splice(f->pipe_r, NULL, to, NULL, f->pending,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n < 0) return errno == EAGAIN ? 0 : -1; /* wait for EPOLLOUT on `to` */
      f->pending -= (size_t)n;
    }
    const ssize_t n = splice(from, NULL, f->pipe_w, NULL, f->capacity,
                             SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n == 0) return -1;                       /* peer closed */
    if (n < 0) return errno == EAGAIN ? 0 : -1;  /* wait for EPOLLIN on `from` */
    f->pending = (size_t)n;
  }
}

static void close_pair(struct pair *p, struct pair **dead_list) {
  if (p->dead) return;
  p->dead = 1;
  close(p->client.fd);
  close(p->upstream.fd);
  if (!copy_mode) {
    close(p->up.pipe_r);
    close(p->up.pipe_w);
    close(p->down.pipe_r);
    close(p->down.pipe_w);
  }
  free(p->up.buf);
  free(p->down.buf);
  p->next_dead = *dead_list;
  *dead_list = p;
}

static void accept_one(int epfd, const struct listener *l) {
  const int client = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (client < 0) return;
  /* Loopback connect: blocking is quick and keeps the relay simple. */
  const int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (upstream < 0 ||
      connect(upstream, (const struct sockaddr *)&l->target, sizeof l->target) != 0) {
    if (upstream >= 0) close(upstream);
    close(client);
    return;
  }
  set_nonblocking(upstream);
  set_nodelay(client);
  set_nodelay(upstream);
  struct pair *p = calloc(1, sizeof *p);
  if (p == NULL || open_flow(&p->up) != 0 || open_flow(&p->down) != 0) {
    close(client);
    close(upstream);
    free(p);
    return;
  }
  p->client.pair = p->upstream.pair = p;
  p->client.fd = client;
  p->upstream.fd = upstream;
  struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET};
  ev.data.ptr = &p->client;
  epoll_ctl(epfd, EPOLL_CTL_ADD, client, &ev);
  ev.data.ptr = &p->upstream;
  epoll_ctl(epfd, EPOLL_CTL_ADD, upstream, &ev);
}

static int parse_target(const char *text, struct sockaddr_in *out) {
  const char *colon = strrchr(text, ':');
  if (colon == NULL) return -1;
  char host[64];
  const size_t len = (size_t)(colon - text);
  if (len == 0 || len >= sizeof host) return -1;
  memcpy(host, text, len);
  host[len] = '\0';
  memset(out, 0, sizeof *out);
  out->sin_family = AF_INET;
  out->sin_port = htons((uint16_t)atoi(colon + 1));
  return inet_pton(AF_INET, host, &out->sin_addr) == 1 ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--copy") == 0) {
    copy_mode = 1;
    --argc;
    ++argv;
  }
  if (argc < 2 || argc - 1 > MAX_TARGETS) {
    fprintf(stderr,
            "usage: splice_relay [--copy] TARGET_HOST:PORT [TARGET_HOST:PORT ...] (at most %d)\n",
            MAX_TARGETS);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  const int epfd = epoll_create1(EPOLL_CLOEXEC);
  struct listener listeners[MAX_TARGETS];
  const int n_listeners = argc - 1;
  char ready[64 * MAX_TARGETS] = "splice-relay ready listen=";
  for (int i = 0; i < n_listeners; ++i) {
    struct listener *l = &listeners[i];
    if (parse_target(argv[i + 1], &l->target) != 0) {
      fprintf(stderr, "splice_relay: bad target %s (want IPv4:port)\n", argv[i + 1]);
      return 2;
    }
    l->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof addr;
    if (l->fd < 0 || bind(l->fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(l->fd, 1024) != 0 || getsockname(l->fd, (struct sockaddr *)&addr, &alen) != 0) {
      perror("splice_relay: listen");
      return 1;
    }
    /* Listeners are tagged by a data.u64 below 2^32; pairs by pointers. */
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)i};
    epoll_ctl(epfd, EPOLL_CTL_ADD, l->fd, &ev);
    char one[48];
    snprintf(one, sizeof one, "%s127.0.0.1:%d", i ? "," : "", ntohs(addr.sin_port));
    strncat(ready, one, sizeof ready - strlen(ready) - 1);
  }
  printf("%s mode=%s\n", ready, copy_mode ? "copy" : "splice");
  fflush(stdout);

  struct epoll_event events[256];
  while (!stop_requested) {
    const int n = epoll_wait(epfd, events, 256, 500);
    struct pair *dead = NULL;
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 < (uint64_t)n_listeners) {
        accept_one(epfd, &listeners[events[i].data.u64]);
        continue;
      }
      struct end *e = events[i].data.ptr;
      struct pair *p = e->pair;
      if (p->dead) continue;
      /* Any readiness on either socket: pump both directions until they
       * would block (edge-triggered, so nothing is left unread). */
      if (pump(p->client.fd, p->upstream.fd, &p->up) != 0 ||
          pump(p->upstream.fd, p->client.fd, &p->down) != 0 ||
          (events[i].events & (EPOLLERR | EPOLLHUP)) != 0)
        close_pair(p, &dead);
    }
    while (dead != NULL) {
      struct pair *next = dead->next_dead;
      free(dead);
      dead = next;
    }
  }
  return 0;
}

/* bench/zero_copy_probe.c: measures, on this machine's loopback, what each
 * way of moving a Kafka-shaped frame through a relay costs in the relay's own
 * CPU, so that the choice of a zero-copy path for record bytes rests on a
 * figure. A benchmark reference only: never part of epochgate, never run by
 * the tests, no parsing beyond the fixed frame layout it generates.
 *
 * The frame imitates a Produce request (or a Fetch response): a 4-byte size
 * prefix, then K parts, each a small structural header (H bytes, what the
 * policy reads) followed by R record bytes (what it never reads). A sender
 * thread writes frames to the relay, a sink thread reads and discards what
 * the relay forwards; only the relay thread's CPU (RUSAGE_THREAD) is counted.
 *
 * Modes (how the relay thread moves one frame):
 *   copy        recv the whole frame into user space, send it (epochgate's path)
 *   copy-zc     as copy, but send with MSG_ZEROCOPY and wait for its completion
 *   splice-seg  recv each structural header into user space, splice(2) each
 *               record part socket -> pipe; once the frame is read (the point
 *               where fencing has seen every partition), send each header with
 *               MSG_MORE and splice each record part pipe -> socket
 *   splice-all  splice the whole frame through the pipe, reading nothing (the
 *               floor: bench/splice_relay.c's path)
 *
 * usage: zero_copy_probe MODE PARTS RECORD_BYTES [HEADER_BYTES [MEGABYTES]]
 * prints one line: mode=... parts=... record_bytes=... header_bytes=...
 *   frames=... gb=... wall_s=... relay_cpu_s=... cpu_s_per_gb=...
 *   syscalls_per_frame=... zerocopy_copied=...
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

static size_t g_parts, g_record, g_header, g_frame; /* g_frame: bytes after the prefix */
static uint64_t g_frames;                           /* frames the sender writes */

static void die(const char *what) {
  perror(what);
  exit(2);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A connected loopback TCP pair: out[0] connects, out[1] is accepted. */
static void tcp_pair(int out[2]) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1) < 0 ||
      getsockname(l, (struct sockaddr *)&a, &len) < 0)
    die("listen");
  out[0] = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(out[0], (struct sockaddr *)&a, sizeof a) < 0) die("connect");
  out[1] = accept(l, NULL, NULL);
  if (out[1] < 0) die("accept");
  close(l);
  int one = 1;
  setsockopt(out[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(out[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static uint64_t g_syscalls;

static void recv_exact(int fd, uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    ++g_syscalls;
    if (r <= 0) die("recv");
    p += r;
    n -= (size_t)r;
  }
}

static void send_all(int fd, const uint8_t *p, size_t n, int flags) {
  while (n > 0) {
    ssize_t r = send(fd, p, n, flags);
    ++g_syscalls;
    if (r < 0) die("send");
    p += r;
    n -= (size_t)r;
  }
}

static void splice_exact(int from, int to, size_t n, unsigned flags) {
  while (n > 0) {
    ssize_t r = splice(from, NULL, to, NULL, n, SPLICE_F_MOVE | flags);
    ++g_syscalls;
    if (r <= 0) die("splice");
    n -= (size_t)r;
  }
}

static void *sender(void *arg) {
  int fd = *(int *)arg;
  size_t total = 4 + g_frame;
  uint8_t *frame = malloc(total);
  memset(frame, 0x5a, total);
  uint32_t be = htonl((uint32_t)g_frame);
  memcpy(frame, &be, 4);
  for (uint64_t i = 0; i < g_frames; ++i) {
    const uint8_t *p = frame;
    size_t n = total;
    while (n > 0) {
      ssize_t r = send(fd, p, n, 0);
      if (r < 0) die("sender");
      p += r;
      n -= (size_t)r;
    }
  }
  shutdown(fd, SHUT_WR);
  free(frame);
  return NULL;
}

static void *sink(void *arg) {
  int fd = *(int *)arg;
  static uint8_t buf[1 << 18];
  while (recv(fd, buf, sizeof buf, 0) > 0) {
  }
  return NULL;
}

/* Waits for the kernel to release every MSG_ZEROCOPY send up to `upto`;
 * counts completions the kernel served by copying after all. */
static uint64_t g_zc_copied;
static void zerocopy_wait(int fd, uint32_t upto) {
  static uint32_t done = 0; /* sends completed so far, as the kernel numbers them */
  while (done < upto) {
    char control[128];
    struct msghdr msg = {.msg_control = control, .msg_controllen = sizeof control};
    ssize_t r = recvmsg(fd, &msg, MSG_ERRQUEUE);
    ++g_syscalls;
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        struct timespec pause = {0, 20000};
        nanosleep(&pause, NULL);
        continue;
      }
      die("recvmsg errqueue");
    }
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      struct sock_extended_err *e = (struct sock_extended_err *)CMSG_DATA(c);
      if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY) continue;
      if (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) g_zc_copied += e->ee_data - e->ee_info + 1;
      done = e->ee_data + 1;
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s copy|copy-zc|splice-seg|splice-all PARTS RECORD_BYTES [HEADER_BYTES [MEGABYTES]]\n",
            argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  g_parts = strtoul(argv[2], NULL, 10);
  g_record = strtoul(argv[3], NULL, 10);
  g_header = argc > 4 ? strtoul(argv[4], NULL, 10) : 64;
  size_t megabytes = argc > 5 ? strtoul(argv[5], NULL, 10) : 2048;
  g_frame = g_parts * (g_header + g_record);
  if (g_parts == 0 || g_header == 0 || g_frame > (1u << 20)) {
    fprintf(stderr, "parts*(header+record) must be 1..1048576 bytes (one pipe holds a frame)\n");
    return 2;
  }
  g_frames = (uint64_t)megabytes * 1000000 / (4 + g_frame) + 1;

  int in[2], out[2]; /* in: sender -> relay; out: relay -> sink */
  tcp_pair(in);
  tcp_pair(out);
  int pipefd[2];
  if (pipe(pipefd) < 0) die("pipe");
  if (fcntl(pipefd[1], F_SETPIPE_SZ, 1 << 20) < 0) die("F_SETPIPE_SZ");
  int zc = strcmp(mode, "copy-zc") == 0;
  if (zc) {
    int one = 1;
    if (setsockopt(out[0], SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one) < 0) die("SO_ZEROCOPY");
    fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK); /* the error queue only */
  }
  pthread_t ts, tk;
  pthread_create(&ts, NULL, sender, &in[0]);
  pthread_create(&tk, NULL, sink, &out[1]);

  uint8_t *buf = malloc(4 + g_frame);
  uint8_t *headers = malloc(g_parts * g_header);
  struct rusage r0, r1;
  getrusage(RUSAGE_THREAD, &r0);
  double t0 = now_s();
  uint32_t zc_sends = 0;
  for (uint64_t f = 0; f < g_frames; ++f) {
    if (strcmp(mode, "copy") == 0 || zc) {
      recv_exact(in[1], buf, 4 + g_frame);
      if (!zc) {
        send_all(out[0], buf, 4 + g_frame, 0);
        continue;
      }
      /* Nonblocking for the error queue: retry a full send buffer. */
      const uint8_t *p = buf;
      size_t n = 4 + g_frame;
      while (n > 0) {
        ssize_t r = send(out[0], p, n, MSG_ZEROCOPY);
        ++g_syscalls;
        if (r < 0) {
          if (errno != EAGAIN) die("send zerocopy");
          struct timespec pause = {0, 20000};
          nanosleep(&pause, NULL);
          continue;
        }
        ++zc_sends;
        p += r;
        n -= (size_t)r;
      }
      zerocopy_wait(out[0], zc_sends); /* the buffer is reused for the next frame */
    } else if (strcmp(mode, "splice-seg") == 0) {
      recv_exact(in[1], buf, 4);
      for (size_t i = 0; i < g_parts; ++i) {
        recv_exact(in[1], headers + i * g_header, g_header);
        splice_exact(in[1], pipefd[1], g_record, 0);
      }
      send_all(out[0], buf, 4, MSG_MORE);
      for (size_t i = 0; i < g_parts; ++i) {
        send_all(out[0], headers + i * g_header, g_header, MSG_MORE);
        splice_exact(pipefd[0], out[0], g_record, i + 1 < g_parts ? SPLICE_F_MORE : 0);
      }
    } else if (strcmp(mode, "splice-all") == 0) {
      splice_exact(in[1], pipefd[1], 4 + g_frame, 0);
      splice_exact(pipefd[0], out[0], 4 + g_frame, 0);
    } else {
      fprintf(stderr, "unknown mode %s\n", mode);
      return 2;
    }
  }
  double wall = now_s() - t0;
  getrusage(RUSAGE_THREAD, &r1);
  shutdown(out[0], SHUT_WR);
  pthread_join(ts, NULL);
  pthread_join(tk, NULL);
  double cpu = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
               ((r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) + (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec)) / 1e6;
  double gb = (double)g_frames * (4 + g_frame) / 1e9;
  printf("mode=%s parts=%zu record_bytes=%zu header_bytes=%zu frames=%llu gb=%.3f wall_s=%.3f "
         "relay_cpu_s=%.3f cpu_s_per_gb=%.3f syscalls_per_frame=%.1f zerocopy_copied=%llu\n",
         mode, g_parts, g_record, g_header, (unsigned long long)g_frames, gb, wall, cpu, cpu / gb,
         (double)g_syscalls / g_frames, (unsigned long long)g_zc_copied);
  return 0;
}

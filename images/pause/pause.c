/* Ferry's pod sandbox ("pause") process, written for ferry.local/pause:dev.
 * As PID 1 of a pod it holds the namespaces open and does nothing: it sleeps in pause(),
 * reaps any child that gets re-parented to it (SIGCHLD), and exits 0 on SIGINT or SIGTERM.
 * Built static: musl-gcc -static -Os -o pause pause.c */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) { (void)sig; _exit(0); }

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "-v") == 0 || strcmp(argv[1], "--version") == 0)) {
    puts("ferry-pause 1");
    return 0;
  }
  if (getpid() != 1) fputs("pause: warning: not running as PID 1\n", stderr);
  struct sigaction stop = {.sa_handler = on_stop}, child = {.sa_handler = on_child};
  sigemptyset(&stop.sa_mask);
  sigemptyset(&child.sa_mask);
  child.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
      sigaction(SIGCHLD, &child, NULL) < 0) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;) pause();
}

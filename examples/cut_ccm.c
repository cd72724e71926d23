/*
 * A cruise controller under test in C on a raw SocketCAN socket: examples/cut_ccm.py's twin, for
 * `ecu-sim campaign examples/controller_c.toml --socketcan` (docs/testing-a-controller.md).
 *
 * It hears the ECU's wheel-based speed (0x18FEF125, bytes 5..6, 1/256 km/h) and sends the
 * accelerator pedal (0x18F00326, byte 6, 1 %/bit, offset -125 %, the other bytes 0xFF) every
 * 100 ms from the same PI controller, gains and anti-windup as the Python one, rounding half to
 * even as Python's round() does, so a campaign's rows of the two agree within the spread of
 * real-time runs. Until it has heard a speed it sends APP 0. SIGTERM ends it.
 *
 *   gcc -O2 -Wall -o cut_ccm examples/cut_ccm.c -lm
 *   ./cut_ccm --iface vcan0 --set-speed 90
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fenv.h>
#include <linux/can.h>
#include <linux/can/raw.h>
#include <math.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SPEED_ID 0x18FEF125u
#define APP_ID 0x18F00326u
#define PERIOD_S 0.1
#define KP 20.0 /* % APP per km/h */
#define KI 2.0  /* % APP per km/h s */

static volatile sig_atomic_t running = 1;

static void stop(int signum) {
    (void)signum;
    running = 0;
}

static double clamp(double value, double low, double high) {
    return value < low ? low : value > high ? high : value;
}

/* ecu-sim's PI cruise controller: conditional integration, output clamped to 0..100 %. */
static double pi_step(double *integral, double set_kph, double speed_kph, double dt_s) {
    double error = set_kph - speed_kph;
    if (!isfinite(error))
        error = 0.0;
    double p_term = KP * error;
    double held = clamp(*integral, 0.0, 100.0);
    double candidate = held + KI * error * dt_s;
    double unclamped = p_term + candidate;
    if (!((unclamped > 100.0 && error > 0.0) || (unclamped < 0.0 && error < 0.0)))
        held = clamp(candidate, 0.0, 100.0);
    *integral = held;
    return clamp(p_term + held, 0.0, 100.0);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int open_can(const char *iface) {
    int sock = socket(PF_CAN, SOCK_RAW, CAN_RAW);
    if (sock < 0) {
        perror("socket(PF_CAN)");
        return -1;
    }
    struct sockaddr_can addr = {.can_family = AF_CAN, .can_ifindex = (int)if_nametoindex(iface)};
    if (addr.can_ifindex == 0) {
        fprintf(stderr, "no interface %s\n", iface);
        close(sock);
        return -1;
    }
    struct can_filter filter = {.can_id = SPEED_ID | CAN_EFF_FLAG, .can_mask = CAN_EFF_MASK | CAN_EFF_FLAG};
    setsockopt(sock, SOL_CAN_RAW, CAN_RAW_FILTER, &filter, sizeof filter);
    if (bind(sock, (struct sockaddr *)&addr, sizeof addr) < 0) {
        perror("bind");
        close(sock);
        return -1;
    }
    return sock;
}

static int send_app(int sock, double app_pct) {
    struct can_frame frame = {.can_id = APP_ID | CAN_EFF_FLAG, .can_dlc = 8};
    memset(frame.data, 0xFF, sizeof frame.data);
    frame.data[6] = (unsigned char)((long)nearbyint(app_pct) + 125);
    if (write(sock, &frame, sizeof frame) != (ssize_t)sizeof frame && errno != ENOBUFS) {
        perror("write");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *iface = NULL;
    double set_kph = NAN;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--iface") == 0)
            iface = argv[i + 1];
        else if (strcmp(argv[i], "--set-speed") == 0)
            set_kph = strtod(argv[i + 1], NULL);
    }
    if (iface == NULL || isnan(set_kph)) {
        fprintf(stderr, "usage: %s --iface NAME --set-speed KPH\n", argv[0]);
        return 2;
    }
    fesetround(FE_TONEAREST);
    struct sigaction action = {.sa_handler = stop};
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    int sock = open_can(iface);
    if (sock < 0)
        return 1;

    double integral = 0.0, speed = NAN, due = now_s();
    while (running) {
        double left = due - now_s();
        struct pollfd wait = {.fd = sock, .events = POLLIN};
        int ready = poll(&wait, 1, left > 0 ? (int)ceil(left * 1000.0) : 0);
        if (ready > 0) {
            struct can_frame frame;
            if (read(sock, &frame, sizeof frame) == (ssize_t)sizeof frame
                    && (frame.can_id & CAN_EFF_MASK) == SPEED_ID && frame.can_dlc >= 7)
                speed = (double)(frame.data[5] | frame.data[6] << 8) / 256.0;
        }
        if (now_s() >= due) {
            double app = isnan(speed) ? 0.0 : pi_step(&integral, set_kph, speed, PERIOD_S);
            if (send_app(sock, app) < 0)
                return 1;
            due += PERIOD_S;
        }
    }
    close(sock);
    return 0;
}

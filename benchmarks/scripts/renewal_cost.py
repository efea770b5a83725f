#!/usr/bin/env python3
"""Redis CPU per renewed key: distlock's renewal script beside Redisson's and two floors.

Starts its own redis-server on a free loopback port (no persistence), fills it with 10^5 lock hashes, then sends every
variant over all keys, rounds x repeats, interleaved, and reads redis-server's CPU time from /proc around each pass.
Prints the median microseconds of server CPU per renewed key. Usage: python3 renewal_cost.py [repeats]
"""
import os, re, socket, statistics, subprocess, sys, time

N, CID = 100_000, "0b3f5c2e-8a4b-4c1d-9e7f-123456789abc"
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "../../redis/src/main/java/io/github/distlock/redisson/LeaseMonitor.java")
DISTLOCK = re.search(r'RENEW_SCRIPT = """\n(.*?)""";', open(SOURCE).read(), re.S).group(1)
# Redisson 4.7.0's renewal script for RLock (org.redisson.renewal.LockTask), one field per key, 100 keys per script
REDISSON = ("local result = {} for i = 1, #KEYS, 1 do if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then "
            "redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); else table.insert(result, 0); end; "
            "end; return result;")
PEXPIRE_ONLY = "for i = 1, #KEYS do redis.call('pexpire', KEYS[i], ARGV[1]) end return {}"


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def read(self):
        line = self.file.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"-":
            raise RuntimeError(line)
        if kind in b"+:":
            return rest
        if kind == b"$":
            return None if int(rest) < 0 else self.file.read(int(rest) + 2)[:-2]
        return [self.read() for _ in range(max(int(rest), 0))]

    def pipe(self, commands):
        self.sock.sendall(b"".join(commands))
        return [self.read() for _ in commands]


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                conn = Conn(port)
                break
            except OSError:
                time.sleep(0.05)
        keys = ["distlock:held:%d" % i for i in range(N)]
        for base in range(0, N, 5000):
            conn.pipe([resp("HSET", keys[i], "%s:%d" % (CID, i), 1) for i in range(base, base + 5000)])
            conn.pipe([resp("PEXPIRE", keys[i], 30000) for i in range(base, base + 5000)])

        def cpu():
            fields = open("/proc/%d/stat" % server.pid).read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        def scripted(script, chunk, args):
            sha = conn.pipe([resp("SCRIPT", "LOAD", script)])[0]
            return [resp("EVALSHA", sha, len(part), *part, *args(range(b, b + len(part))))
                    for b in range(0, N, chunk) for part in [keys[b:b + chunk]]]

        variants = {
            "distlock (500 keys, owner ids in one argument)": scripted(DISTLOCK, 500, lambda idx: [
                CID + ":", 30000, "", "", ",".join(str(i) for i in idx)]),
            "Redisson 4.7.0 (100 keys, a field per key)": scripted(REDISSON, 100, lambda idx: [30000] + [
                "%s:%d" % (CID, i) for i in idx]),
            "floor: PEXPIRE in a script, no owner check": scripted(PEXPIRE_ONLY, 500, lambda idx: [30000]),
            "floor: PEXPIRE commands, pipelined": [resp("PEXPIRE", k, 30000) for k in keys],
        }
        results = {name: [] for name in variants}
        for _ in range(repeats):
            for name, commands in variants.items():
                before = cpu()
                for _ in range(4):
                    for base in range(0, len(commands), 1000):
                        conn.pipe(commands[base:base + 1000])
                results[name].append((cpu() - before) * 1e6 / (4 * N))
        for name, values in results.items():
            print("%-48s median %.2f us of Redis CPU per renewed key (%s)" % (
                name, statistics.median(values), " ".join("%.2f" % v for v in values)))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()

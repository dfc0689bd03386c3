"""Opens up to COUNT idle TCP connections to HOST:PORT (raising its own descriptor limit), writes
READY_FILE when they are open, and holds them until killed."""
import resource
import socket
import sys
import time

host, port, count, ready_file = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
for _ in range(count):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect((host, port))
    except OSError:
        s.close()
        continue
    held.append(s)
with open(ready_file, "w") as f:
    f.write(f"{len(held)}\n")
while True:
    time.sleep(60)

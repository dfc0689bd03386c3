"""Keeps COUNT connections to HOST:PORT open, each having sent one byte (the start of a handshake
that never finishes), opening a new one for each the store closes, until killed; writes
READY_FILE once the first COUNT are open. A stranger who can reach the store's port."""
import resource
import selectors
import socket
import sys

host, port, count, ready_file = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
sel = selectors.DefaultSelector()


def open_one():
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect((host, port))
        s.send(b"x")
    except OSError:
        s.close()
        return
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)


for _ in range(count):
    open_one()
with open(ready_file, "w") as f:
    f.write(f"{len(sel.get_map())}\n")
while True:
    for key, _ in sel.select(timeout=1):
        s = key.fileobj
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if not data:
            sel.unregister(s)
            s.close()
            open_one()

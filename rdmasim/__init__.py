"""rdmasim: a packet-level RDMA (RoCEv2) transport emulator with a compiled C core."""

__version__ = "0.1.0"

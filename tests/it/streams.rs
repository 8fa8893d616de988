//! Streams: pipes, FIFOs, standard input (`-`) and endless inputs such as /dev/zero.

//! The only place with `unsafe`: thin wrappers over setsockopt/ioctl that the
//! socket2 and std APIs do not cover. Each wrapper says why it is sound.

#!/bin/sh
# Tests of the VM runner itself (tests/vm/host/*.bats): run on the host, boot QEMU a few
# times. Exit status is bats's.
here=$(cd "$(dirname "$0")" && pwd)
exec bats --print-output-on-failure "$here/host"

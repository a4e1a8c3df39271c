# The devices of the ASan+UBSan build (scripts/build-qemu san, configured
# --without-default-devices): the machines the qtests run on, qrdma, and
# the devices the qtests plug beside it, nothing else.  Half the compile
# time of a default build is devices no qtest here uses.
#
# pc: qos-test's x86_64 machine, where every qrdma path runs; q35: the
# PCIe machine the VMs use, for a qtest that puts qrdma behind a root port.
CONFIG_I440FX=y
CONFIG_Q35=y
CONFIG_QRDMA=y
# qrdma-dp-hostile-test's second PCI function, whose BAR a WQE points at.
CONFIG_IVSHMEM_DEVICE=y
# From 10.2 the ACPI tables of pc and q35 (hw/acpi/cxl.c) call into the
# CXL host code, whose stub lacks cxl_fmws_get_all_sorted(): without CXL,
# which only default devices bring, the link fails.  CXL depends on PXB,
# its mailbox code calls the type 3 device's, its root port is a PCIe one.
CONFIG_PXB=y
CONFIG_CXL=y
CONFIG_CXL_MEM_DEVICE=y
CONFIG_PCIE_PORT=y

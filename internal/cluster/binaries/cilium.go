package binaries

// ciliumComponents are the binaries of the cilium datapaths.
func ciliumComponents() []Component { return nil }

package binaries

// flannelComponents are the binaries of the flannel datapaths.
func flannelComponents() []Component { return nil }

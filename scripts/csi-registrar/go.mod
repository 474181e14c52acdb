// The kubelet plugin registration of the test CSI driver (main.go). Its dependencies are pinned to
// those of the newest Kubernetes module (scripts/k8s), so the Go build cache shares their packages.
module ferry.dev/testenv/csi-registrar

go 1.26.0

require (
	google.golang.org/grpc v1.84.0
	k8s.io/kubelet v0.37.2
)

require (
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.40.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260706201446-f0a921348800 // indirect
	google.golang.org/protobuf v1.36.12-0.20260120151049-f2248ac996af // indirect
)

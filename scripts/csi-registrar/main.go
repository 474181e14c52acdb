// Command csi-registrar registers one CSI driver with the kubelet's plugin watcher, as the upstream
// node-driver-registrar does: it serves the kubelet's pluginregistration API on a socket in the
// kubelet's plugin registry directory and names the driver's CSI endpoint. The Go module proxy here
// serves no version of node-driver-registrar (its v2 tags lack the /v2 module path), and the Rust
// driver cannot serve this API itself: the kubelet dials the registry socket with its path as the
// HTTP/2 :authority, which hyper's h2 (under tonic) refuses as malformed; grpc-go accepts it.
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"os"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

type registrar struct {
	registerapi.UnimplementedRegistrationServer
	name     string
	endpoint string
}

func (r *registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.name,
		Endpoint:          r.endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

func (r *registrar) NotifyRegistrationStatus(_ context.Context, status *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if status.PluginRegistered {
		log.Printf("%s registered with the kubelet", r.name)
	} else {
		log.Printf("the kubelet refused %s: %s", r.name, status.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

func main() {
	name := flag.String("driver-name", "", "the CSI driver name")
	endpoint := flag.String("csi-address", "", "the driver's CSI socket, as the kubelet should dial it")
	socket := flag.String("registration-socket", "", "the socket to serve in the kubelet's plugin registry")
	flag.Parse()
	if *name == "" || *endpoint == "" || *socket == "" {
		log.Fatal("--driver-name, --csi-address and --registration-socket are required")
	}
	// A socket file a killed registrar left would refuse the bind.
	if err := os.Remove(*socket); err != nil && !os.IsNotExist(err) {
		log.Fatal(err)
	}
	listener, err := net.Listen("unix", *socket)
	if err != nil {
		log.Fatal(err)
	}
	server := grpc.NewServer()
	registerapi.RegisterRegistrationServer(server, &registrar{name: *name, endpoint: *endpoint})
	log.Printf("serving the registration of %s at %s", *name, *socket)
	log.Fatal(server.Serve(listener))
}

package httpapi

import (
	"encoding/json"
	"net/http"
	"runtime"

	"github.com/labstack/echo/v4"
	"k8s.io/apimachinery/pkg/version"
)

// Version is the Kubernetes version edgeapi reports to clients: the
// kube-apiserver release whose API behaviour it follows.
var Version = version.Info{
	Major:        "1",
	Minor:        "36",
	GitVersion:   "v1.36.3",
	GitCommit:    "",
	GitTreeState: "clean",
	BuildDate:    "1970-01-01T00:00:00Z",
	GoVersion:    runtime.Version(),
	Compiler:     runtime.Compiler,
	Platform:     runtime.GOOS + "/" + runtime.GOARCH,
}

func (s *Server) serveVersion(c echo.Context) error {
	return c.JSON(http.StatusOK, Version)
}

func jsonMarshal(v interface{}) ([]byte, error) { return json.Marshal(v) }

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

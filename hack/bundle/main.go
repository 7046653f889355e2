package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var o Options
	flag.StringVar(&o.Root, "root", "../..", "the kafkalink checkout")
	flag.StringVar(&o.Out, "out", "../../_output/bundle", "the bundle folder to write (replaced)")
	flag.StringVar(&o.Version, "version", "", "the release version (default: the VERSION file)")
	flag.StringVar(&o.Registry, "registry", "ghcr.io/kafkalink", "where the images live")
	archive := flag.String("image-archive", "", "also write the bundle image, tagged <registry>/kafkalink-bundle:<version>, as an oci-archive to this file")
	flag.Parse()
	if o.Version == "" {
		v, err := os.ReadFile(o.Root + "/VERSION")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		o.Version = string(trimNewline(v))
	}
	if err := Generate(o); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
	if *archive != "" {
		if err := WriteImage(o.Out, o.Registry+"/kafkalink-bundle:"+o.Version, *archive); err != nil {
			fmt.Fprintln(os.Stderr, "bundle image:", err)
			os.Exit(1)
		}
	}
	fmt.Println(o.Out)
}

// trimNewline drops the VERSION file's line ending.
func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

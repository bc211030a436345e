package main

import (
	"fmt"

	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/spool"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/spf13/cobra"
)

func newResultsImportCommand(location *string) *cobra.Command {
	return &cobra.Command{
		Use:   "import FILE...",
		Short: "Store runs from JSON files: exports, or the samples a run kept while its store was away",
		Long: `Stores each file's run in the results store: a JSON export (results export -o json) or the
spool file a run leaves when its store did not come back before it ended. The run and its
targets are created if the store lacks them; samples the run already holds are left as they
are, so a file imported twice adds nothing the second time; the run's ending is written if
the stored run has none.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := store.Open(cmd.Context(), *location)
			if err != nil {
				return &setting.Error{Name: "store", Err: err}
			}
			defer db.Close()
			for _, path := range args {
				id, got, err := spool.Import(cmd.Context(), db, path)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "run %s: %d samples added, %d already stored, %d targets added%s\n",
					id, got.Samples, got.Existing, got.Targets, importedRun(got))
			}
			return nil
		},
	}
}

// importedRun says what became of the run itself.
func importedRun(got store.Imported) string {
	switch {
	case got.NewRun:
		return ", run created"
	case got.Finished:
		return ", run's ending written"
	}
	return ""
}

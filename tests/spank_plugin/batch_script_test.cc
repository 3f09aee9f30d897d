// #SBATCH lines as sbatch reads them.
#include "spank_plugin/batch_script.h"

#include <gtest/gtest.h>

namespace xdeep::spank {
namespace {

TEST(BatchScriptTest, ReadsDirectivesUntilTheFirstCommand) {
  BatchDirectives d = ParseBatchDirectives(
      "#!/bin/bash\n"
      "\n"
      "#SBATCH -N 2 --gpus-per-node=2   # two nodes\n"
      "# a comment\n"
      "#SBATCH --job-name=\"my job\"\n"
      "  #SBATCH -p indented\n"
      "#SBATCHx ignored\n"
      "srun hostname\n"
      "#SBATCH -A late\n");
  EXPECT_EQ(d.args,
            (std::vector<std::string>{"-N", "2", "--gpus-per-node=2", "--job-name=my job"}));
  EXPECT_FALSE(d.heterogeneous);
}

TEST(BatchScriptTest, HetjobSeparatorEndsTheFirstComponent) {
  BatchDirectives d = ParseBatchDirectives("#!/bin/sh\n#SBATCH -n1\n#SBATCH hetjob\n#SBATCH -n2\n");
  EXPECT_EQ(d.args, std::vector<std::string>{"-n1"});
  EXPECT_TRUE(d.heterogeneous);
}

TEST(BatchScriptTest, MissingScriptIsOneLine) {
  BatchDirectives d;
  std::string error;
  EXPECT_FALSE(ReadBatchScript("/nonexistent/job.sh", &d, &error));
  EXPECT_NE(error.find("/nonexistent/job.sh"), std::string::npos);
}

}  // namespace
}  // namespace xdeep::spank

-- CreateTable
CREATE TABLE "server_settings" (
    "name" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "server_settings_pkey" PRIMARY KEY ("name")
);

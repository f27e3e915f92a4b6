// Stylesheets are imported for their effect (Vite bundles them into one CSS file).
declare module "*.css";
